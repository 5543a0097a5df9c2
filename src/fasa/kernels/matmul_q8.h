// Integer matmul for 32-element block quants (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): activations are
// quantized to 8 bits per 32-block and each block's dot product is an exact integer sum, the way
// llama.cpp's CPU backend computes these products (and with its exact numerics):
//
//   activations (per token, per 32-block; quantize_row_q8_1's x86 branch):
//     amax = max |x|;  d = amax / 127;  id = amax ? 127 / amax : 0;  q = round-half-even(x * id)
//     dx = fp16(d);  sx = fp16(d * sum(q))          (both kept as the fp32 of the fp16)
//   weights: unsigned codes u (0..15, 0..31, or q + 128 for Q8_0) with value (u - off) * dw (+ m)
//   y[t, o] = hsum8(acc) (+ summs), over the row's blocks b in order:
//     lane_k = sum_{j = 4k .. 4k+3} (u_j - off) * q_j        (k < 8; an exact integer)
//     acc[k] = fma(dw_b * dx_b, float(lane_k), acc[k])
//     summs  = summs + m_b * sx_b                             (Q4_1, Q5_1 only)
//   hsum8(a) = ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7))
//
// Elements are in block order (for 4-bit codes: element j < 16 is the low nibble of byte j, j >= 16
// the high nibble of byte j - 16). Every y[t, o] is this one sequence of fp32 operations on every
// path (AVX-512 VNNI and portable), for any thread count and any n_tok.
#pragma once

#include <cstdint>
#include <vector>

#include "fasa/core/dtype.h"
#include "fasa/kernels/kernel_list.h"

namespace fasa {

// Activations quantized per 32-block. n_in must be a multiple of 32.
struct Q8Acts {
  int64_t n_tok = 0, n_in = 0;
  std::vector<int8_t> q;      // [n_tok, n_in]
  std::vector<float> d;       // [n_tok, n_blocks] fp16-rounded scale
  std::vector<float> s;       // [n_tok, n_blocks] fp16-rounded d * sum(q)
  std::vector<int32_t> sum4;  // [n_tok, n_blocks, 8] sum of q over elements 4k..4k+3
};

// has_q8_path: whether `type` takes this path.
// quantize_acts_q8: x: [n_tok, n_in].
// matmul_q8: y: [n_tok, n_out] (see above). Threads: parallel over output rows.
// matmul_q8_rows: rows [o0, o1) of matmul_q8's y: [n_tok, n_out], computed on the calling thread
//   (no parallel region): the same bits as matmul_q8 gives them. For fused calls (matmul_multi).
#define FASA_MATMUL_Q8_KERNELS(X)                                                         \
  X(bool, has_q8_path, (DType type), (type))                                              \
  X(void, quantize_acts_q8, (const float* x, int64_t n_tok, int64_t n_in, Q8Acts& out),   \
    (x, n_tok, n_in, out))                                                                \
  X(void, matmul_q8,                                                                      \
    (DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a, float* y),  \
    (type, w, n_out, n_in, a, y))                                                         \
  X(void, matmul_q8_rows,                                                                 \
    (DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a, int64_t o0, \
     int64_t o1, float* y),                                                               \
    (type, w, n_out, n_in, a, o0, o1, y))
FASA_MATMUL_Q8_KERNELS(FASA_DECLARE_KERNEL)

namespace detail {
#define FASA_MATMUL_Q8_DETAIL_KERNELS(X)                                                 \
  X(void, matmul_q8_portable,                                                            \
    (DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a, float* y), \
    (type, w, n_out, n_in, a, y))
FASA_MATMUL_Q8_DETAIL_KERNELS(FASA_DECLARE_KERNEL)
}  // namespace detail

}  // namespace fasa
