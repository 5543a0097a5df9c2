// Weight matrix (any supported GGUF type) times f32 activations.
//
//   y[t, o] = sum_i W[o, i] * x[t, i]
//
//   w: [n_out, n_in] rows of `type` in ggml layout: row o is contiguous, n_in elements, stored as
//      n_in / block_elems blocks; n_in must be a multiple of the type's block size.
//   x: [n_tok, n_in] f32, row-major.   y: [n_tok, n_out] f32, row-major (overwritten; must not
//      overlap w or x).
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

namespace fasa {

void matmul(DType type, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok,
            float* y);

namespace ref {
// Plain reference: ref::dequantize_row per weight row, double accumulation. For tests only.
void matmul(DType type, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok,
            float* y);
}  // namespace ref

namespace detail {
// The non-SIMD fallbacks of fasa::matmul and fasa::dequantize_row, always compiled and exposed so
// tests can check they give the same bits as the SIMD paths on machines that have them.
void matmul_portable(DType type, const void* w, int64_t n_out, int64_t n_in, const float* x,
                     int64_t n_tok, float* y);
void dequantize_row_portable(DType type, const void* src, float* dst, int64_t n);
}  // namespace detail

}  // namespace fasa
