// Integer matmul for the K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), the scheme of llama.cpp's CPU
// backend: activations are quantized to 8 bits per 256-block ("q8_K") and each block's dot
// product is an exact integer sum, scaled once in fp32.
//
//   activations (per token, per 256-block; quantize_acts_q8k):
//     mx = the x of largest |x| (the first one on ties);  d = mx / -128;  iscale = -128 / mx
//     q = min(127, round-half-even(x * iscale))   (so mx itself is -128 and x ~ d * q)
//     if mx == 0: d = 0, q = 0.   bsum[g] = sum of q over elements 16g .. 16g + 15 (g < 16)
//   weights: per block fp16 d (and dmin), an unsigned code u per element, an integer scale s_g
//   and an integer coefficient c_g per group g of 16 elements (k = 16 g + ...):
//     Q6_K  w = d s_g (u - 32)        u 0..63, s_g int8       c_g = -32 s_g   (offset type)
//     Q3_K  w = d s_g (u - 4)         u 0..7,  s_g -32..31    c_g = -4 s_g    (offset type)
//     Q2_K  w = d s_g u - dmin m_g    u 0..3,  s_g, m_g 0..15 c_g = -m_g      (min type)
//     Q4_K  w = d s u - dmin m        u 0..15, 6-bit s and m per 32 elements, shared by its two
//     Q5_K                            u 0..31  groups: s_g = s, c_g = -m     (min types)
//   per block b, two exact integers (any summation order gives them):
//     I_b = sum_k s_g(k) u_k q_k  (+ sum_g c_g bsum_g for the offset types)   |I_b| < 2^28
//     M_b = sum_g c_g bsum_g      (min types)                                  |M_b| < 2^22
//   y[t, o] = acc after the row's blocks b in order (acc = 0 first; dq the token's d of block b):
//     f = d * float(I_b);  min types: f = fma(dmin, float(M_b), f);  acc = fma(f, dq, acc)
//
// Every y[t, o] is this one sequence of fp32 operations on every path (AVX-512 VNNI and its
// 16-row kernels, AVX2, portable, and the AMX tiles of matmul_amx.h), for any thread count and
// any n_tok, so a token batched through AMX and the same token decoded alone give the same bits.
// float(I_b) rounds (|I_b| may pass 2^24) but rounds the same exact integer everywhere.
#pragma once

#include <cstdint>
#include <vector>

#include "fasa/core/dtype.h"
#include "fasa/kernels/kernel_list.h"

namespace fasa {

// Activations quantized per 256-block. n_in must be a multiple of 256.
struct Q8KActs {
  int64_t n_tok = 0, n_in = 0;
  std::vector<int8_t> q;      // [n_tok, n_in]
  std::vector<float> d;       // [n_tok, n_blocks]
  std::vector<int32_t> bsum;  // [n_tok, n_blocks, 16] sum of q over each group of 16
  // [n_tok, n_blocks, 4]: pair p = the sums over elements 64 p .. + 31 and 64 p + 32 .. + 63
  // as two int16 (low, high; |sum| <= 4096): a dpwssd operand for the 32-element minimums.
  std::vector<int32_t> bsum_pairs;
};

// has_q8k_path: whether `type` takes this path.
// quantize_acts_q8k: x: [n_tok, n_in]. Defined in matmul_q8k_acts.isa.cpp.
// matmul_q8k: y: [n_tok, n_out] (see above). Threads: parallel over output rows.
#define FASA_MATMUL_Q8K_KERNELS(X)                                                        \
  X(bool, has_q8k_path, (DType type), (type))                                             \
  X(void, quantize_acts_q8k, (const float* x, int64_t n_tok, int64_t n_in, Q8KActs& out), \
    (x, n_tok, n_in, out))                                                                \
  X(void, matmul_q8k,                                                                     \
    (DType type, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a, float* y), \
    (type, w, n_out, n_in, a, y))
FASA_MATMUL_Q8K_KERNELS(FASA_DECLARE_KERNEL)

namespace detail {
#define FASA_MATMUL_Q8K_DETAIL_KERNELS(X)                                                 \
  X(void, matmul_q8k_portable,                                                            \
    (DType type, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a, float* y), \
    (type, w, n_out, n_in, a, y))
FASA_MATMUL_Q8K_DETAIL_KERNELS(FASA_DECLARE_KERNEL)
}  // namespace detail

}  // namespace fasa
