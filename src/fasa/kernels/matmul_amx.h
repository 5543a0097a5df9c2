// AMX int8 tile matmuls for batched work (prefill): the same integer block products as
// matmul_q8k.h (K-quants over q8_K activations) and matmul_q8.h (32-blocks over q8 activations),
// computed with TDPBSSD/TDPBUSD on 16 x 16 int32 tiles, then one fixed fp32 sequence per output.
// fasa::matmul takes this path when amx_active() (core/amx.h) and n_tok >= kAmxMinTokens; decode
// (one token) never does.
//
// Tiles: A = 16 weight rows x 64 bytes (the rows as they are, no transpose), B = 16 tokens'
// activations in VNNI order (16 groups of 4 bytes per token row), C = [16 rows, 16 tokens].
//
// K-quants (matmul_q8k.h's weight model: w_k = d s_g(k) u_k (+ c_g(k) for offset types) and
// - dmin m for min types): per block b the exact integers
//     v_k = s_g(k) u_k + (offset types: c_g(k), else 0)      |v_k| <= 4096
//     hi_k = v_k >> 6 (floor, int8),  lo_k = v_k & 63 (uint8),  so v_k = 64 hi_k + lo_k
//     I_b = 64 * sum_k hi_k q_k + sum_k lo_k q_k   (one TDPBSSD and one TDPBUSD per 64 elements,
//                                                   |I_b| < 2^28, exact in int32)
//     M_b = sum_g c_g bsum_g                       (min types; exact, |M_b| < 2^22)
//   y[t, o] = acc after, over the row's blocks in order (acc = 0 first; dq = the token's q8_K d):
//     f = d * float(I_b);  min types: f = fma(dmin, float(M_b), f);  acc = fma(f, dq, acc)
// 32-blocks (matmul_q8.h's model: w = (u - off) dw (+ m)): per block the exact integer
//     P_b = sum_j (u_j - off) q_j  (one TDPBSSD, K = 32)
//   acc = fma(dw * dx, float(P_b), acc);  min types also summs = summs + m * sx;  y = acc + summs.
//
// Numerics: the K-quants' integers and fp32 sequence are matmul_q8k.h's, so their results equal
// the other paths' bit for bit. The 32-block quants' sequence (one fp32 step per block) differs
// from matmul_q8.h's 8 fp32 lanes per block, which AMX cannot reproduce: its tiles sum whole
// 32-element dot products. Each y[t, o] still depends only on row o and token t (not on threads,
// tiling or n_tok), and both are within
//   |y_amx - y_other| <= (nb + 5) * 2^-23 * S,   S >= sum over blocks |dx| |dw P| (+ |m sx|)
// of each other and of the exact value (nb = blocks per row; docs/CORRECTNESS.md), tested in
// tests/kernels/matmul_amx_test.cpp against the portable path.
#pragma once

#include <cstdint>

#include "fasa/core/dtype.h"
#include "fasa/kernels/kernel_list.h"
#include "fasa/kernels/matmul_q8.h"
#include "fasa/kernels/matmul_q8k.h"

namespace fasa {

// Batches smaller than this stay on the VNNI path (measured: bench/micro, docs/ARCHITECTURE.md).
constexpr int64_t kAmxMinTokens = 16;

// has_amx_path: whether the AMX kernels cover `type` (K-quants, and the 32-block quants).
// matmul_q8k_amx, matmul_q8_amx: y: [n_tok, n_out]. Return false (y untouched) when this
//   instruction set has no AMX kernels (only avx512 has them) or the type is not covered. The
//   caller checks amx_active() first: on a CPU or process without AMX permission these fault.
#define FASA_MATMUL_AMX_KERNELS(X)                                                        \
  X(bool, has_amx_path, (DType type), (type))                                             \
  X(bool, matmul_q8k_amx,                                                                 \
    (DType type, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a, float* y), \
    (type, w, n_out, n_in, a, y))                                                         \
  X(bool, matmul_q8_amx,                                                                  \
    (DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a, float* y),  \
    (type, w, n_out, n_in, a, y))
FASA_MATMUL_AMX_KERNELS(FASA_DECLARE_KERNEL)

}  // namespace fasa
