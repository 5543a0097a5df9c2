// Plain scalar references of the kernels, for tests only (tests/support/ref/*.cpp): each written
// straight from the math or the block layouts, never sharing code with the kernels it checks.
#pragma once

#include <cstdint>
#include <vector>

#include "fasa/core/dtype.h"
#include "fasa/kernels/attend.h"
#include "fasa/kernels/tip.h"

namespace fasa::ref {

// ---- dequant ----
// Plain scalar reference, one block at a time, written straight from the block layouts.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

// ---- matmul ----
// Plain reference, double accumulation, for tests only: ref::dequantize_row per weight row times
// the f32 activations; for the q8-path types, block codes straight from the layouts times the
// activations as quantize_acts_q8 quantizes them; for the K-quants, the dequantized rows times
// the activations as quantize_acts_q8k quantizes them (d * q). So the engine's intended math,
// without its fp32 rounding.
void matmul(DType type, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok,
            float* y);

// ---- tip ----
void tip_scores(const void* packed, bool f16, size_t stride, const TipTerm* terms, int n_terms,
                int n, float* scores);
// tip_scores_q8's sequence in plain scalar code (its bits).
void tip_scores_q8(const int8_t* packed, const uint16_t* scale, size_t stride, const TipTerm* terms,
                   int n_terms, int n, float* scores);
// tip_scores_q8b's and tip_scores_q4b's sequences in plain scalar code (their bits).
void tip_scores_q8b(const int8_t* codes, const uint16_t* scale, size_t n_blocks,
                    const TipTerm* terms, int n_terms, int b0, int n, float* scores);
void tip_scores_q4b(const uint8_t* codes, const uint16_t* scale, size_t n_blocks,
                    const TipTerm* terms, int n_terms, int b0, int n, float* scores);

// ---- attend ----
// Double-precision two-pass softmax attention over the rows' values (Q8_0: dequantized; the
// query unquantized). probs: [n] (p on return), out: [head_dim].
void attend_one(const float* q, const KvRows& rows, const int32_t* slots, int n, float scale,
                float* probs, float* out);
// The Q8_0 integer Q.K sequence above in plain scalar code: qk_scores' bits for Q8_0 rows.
void qk_scores_q8(const float* q, const KvRows& rows, const int32_t* slots, int n, float* scores);

// ---- topk ----
// Plain reference: a full stable sort by (score descending, index ascending).
void top_k_indices(const float* scores, int n, int k, std::vector<int32_t>& out);

}  // namespace fasa::ref
