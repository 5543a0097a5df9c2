// Weight matrix (any supported GGUF type) times f32 activations.
//
//   y[t, o] = sum_i W[o, i] * x[t, i]
//
//   w: [n_out, n_in] rows of `type` in ggml layout: row o is contiguous, n_in elements, stored as
//      n_in / block_elems blocks; n_in must be a multiple of the type's block size.
//   x: [n_tok, n_in] f32, row-major.   y: [n_tok, n_out] f32, row-major (overwritten; must not
//      overlap w or x).
//
// Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 weights take the integer path of matmul_q8.h: activations are
// quantized to 8 bits per 32-block and the products follow llama.cpp's numerics exactly. The
// K-quants (Q2_K .. Q6_K) take the integer path of matmul_q8k.h: activations quantized to 8 bits
// per 256-block (q8_K). The float types follow the scheme below.
//
// Determinism (a contract, tested): every y[t, o] is one fixed sequence of fp32 operations that
// depends only on the row W[o, :] and the row x[t, :] — 16 lane accumulators (lane = i mod 16,
// fused multiply-add in increasing i), then the fixed horizontal sum
//   for s in 8, 4, 2, 1:  acc[l] += acc[l + s]  for l < s;   result = acc[0].
// So results are bitwise identical for any thread count, any n_tok (a token computed in a batch
// equals the same token computed alone), and on the SIMD and the portable paths.
//
// Threads: parallel over output rows (parallel_ranges); never nests. Never throws; callers
// validate types and shapes at load time.
#pragma once

#include <cstdint>

#include "fasa/core/dtype.h"
#include "fasa/kernels/kernel_list.h"

namespace fasa {

// Which kernels may take a batch of tokens. kAny: matmul picks, and a batch of at least
// kAmxMinTokens quantized tokens may take the AMX tiles (matmul_amx.h), whose bits differ from
// the per-token kernels'. kPerToken: the per-token kernels only, so every y[t, :] has exactly the
// bits it has when token t is computed alone. A token's bits then depend on the class of its call,
// never on what else shares the batch (model/forward.cpp decides it per sequence chunk).
enum class MatmulTiles { kAny, kPerToken };

// One matrix of a fused call (matmul_multi): y = W x for the call's shared x.
struct MatmulJob {
  DType type = DType::F32;
  const void* w = nullptr;  // [n_out, n_in] rows of `type`
  int64_t n_out = 0;
  float* y = nullptr;  // [n_tok, n_out]; must not overlap another job's y, any w or x
};

// matmul: y = W x as described at the top of this file.
// matmul_multi: the jobs' products with one shared input x: [n_tok, n_in] (q/k/v of a layer, gate/up). Each
// job's y has exactly the bits matmul(job.type, job.w, job.n_out, n_in, x, n_tok, job.y, tiles)
// gives (the per-row arithmetic is the same), but the quantized activations are made once per
// kind (q8 / q8_K) and the quantized jobs' row groups share ONE parallel region: a static
// partition over the jobs' concatenated groups of 4 rows, so which worker computes a row never
// changes a bit. Float types, and batches that may take the AMX tiles, run as separate calls.
#define FASA_MATMUL_KERNELS(X)                                                              \
  X(void, matmul,                                                                           \
    (DType type, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok, \
     float* y, MatmulTiles tiles),                                                          \
    (type, w, n_out, n_in, x, n_tok, y, tiles))                                             \
  X(void, matmul_multi,                                                                     \
    (const MatmulJob* jobs, int n_jobs, int64_t n_in, const float* x, int64_t n_tok,        \
     MatmulTiles tiles),                                                                    \
    (jobs, n_jobs, n_in, x, n_tok, tiles))
FASA_MATMUL_KERNELS(FASA_DECLARE_KERNEL)

// Without `tiles`: MatmulTiles::kAny.
inline void matmul(DType type, const void* w, int64_t n_out, int64_t n_in, const float* x,
                   int64_t n_tok, float* y) {
  matmul(type, w, n_out, n_in, x, n_tok, y, MatmulTiles::kAny);
}
inline void matmul_multi(const MatmulJob* jobs, int n_jobs, int64_t n_in, const float* x,
                         int64_t n_tok) {
  matmul_multi(jobs, n_jobs, n_in, x, n_tok, MatmulTiles::kAny);
}

namespace detail {
// The non-SIMD fallbacks of fasa::matmul and fasa::dequantize_row, always compiled and exposed so
// tests can check they give the same bits as the SIMD paths on machines that have them.
#define FASA_MATMUL_DETAIL_KERNELS(X)                                                       \
  X(void, matmul_portable,                                                                  \
    (DType type, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok, \
     float* y),                                                                             \
    (type, w, n_out, n_in, x, n_tok, y))                                                    \
  X(void, dequantize_row_portable, (DType type, const void* src, float* dst, int64_t n),    \
    (type, src, dst, n))
FASA_MATMUL_DETAIL_KERNELS(FASA_DECLARE_KERNEL)
}  // namespace detail

}  // namespace fasa
