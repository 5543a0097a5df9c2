// TIP scoring (FASA): a query head's partial logits over a packed, column-major slice of keys.
// Column c of the slice holds one key dim for every slot, so scoring streams whole cache lines
// of consecutive slots and vectorizes over slots without horizontal sums.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fasa/kernels/kernel_list.h"
namespace fasa {

// Slots per scale block of a low-bit slice (tip_scores_q8b, tip_scores_q4b).
constexpr int kTipBlock = 32;

// One term of a head's partial logit: coef * packed[col][t].
struct TipTerm {
  int col = 0;
  float coef = 0.0f;
};

// tip_scores: scores[t] = sum_i terms[i].coef * packed[terms[i].col][t] for t in [0, n), the
//   terms summed in order (one fused multiply-add each). packed: [n_cols, stride] of f16
//   (f16 = true) or f32.
// tip_scores_q8: the same over an int8 slice with one fp16 scale per slot (a q8_0 cache's packed
//   slice, kv_cache.h pack_hot_q8): acc = sum_i fma(coef_i, float(packed[col_i][t])) in term
//   order, then scores[t] = acc * fp16_to_fp32(scale[t]). packed: [n_cols, stride] int8;
//   scale: [n] (slot t at scale[t], so pass scale + a with packed + a).
// tip_scores_q8b / tip_scores_q4b: the same over a low-bit slice in blocks of kTipBlock slots
//   (a `slice=q8|q4` packed copy, attention/policies/packed_slice.h), one fp16 scale per
//   (column, block): per block b and term i the coefficient c = coef_i * fp16_to_fp32(
//   scale[col_i * n_blocks + b]) (rounded to fp32), then acc = sum_i fma(c, float(code), acc) in
//   term order. Slots [kTipBlock * b0, kTipBlock * b0 + n) are scored into scores[0, n).
//   q8b codes: [n_cols, kTipBlock * n_blocks] int8, column-major (slot t of column c at
//   c * kTipBlock * n_blocks + t). q4b codes: [n_cols, kTipBlock / 2 * n_blocks] bytes: block b
//   of column c is 16 bytes at (c * n_blocks + b) * 16; byte j holds slot j of the block in its
//   low nibble and slot j + 16 in its high one, each code = nibble - 8. Every byte of a block the
//   call touches is read, scored slots or not (a slice allocates whole blocks).
#define FASA_TIP_KERNELS(X)                                                                 \
  X(void, tip_scores,                                                                       \
    (const void* packed, bool f16, size_t stride, const TipTerm* terms, int n_terms, int n, \
     float* scores),                                                                        \
    (packed, f16, stride, terms, n_terms, n, scores))                                       \
  X(void, tip_scores_q8,                                                                    \
    (const int8_t* packed, const uint16_t* scale, size_t stride, const TipTerm* terms,      \
     int n_terms, int n, float* scores),                                                    \
    (packed, scale, stride, terms, n_terms, n, scores))                                     \
  X(void, tip_scores_q8b,                                                                   \
    (const int8_t* codes, const uint16_t* scale, size_t n_blocks, const TipTerm* terms,     \
     int n_terms, int b0, int n, float* scores),                                            \
    (codes, scale, n_blocks, terms, n_terms, b0, n, scores))                                \
  X(void, tip_scores_q4b,                                                                   \
    (const uint8_t* codes, const uint16_t* scale, size_t n_blocks, const TipTerm* terms,    \
     int n_terms, int b0, int n, float* scores),                                            \
    (codes, scale, n_blocks, terms, n_terms, b0, n, scores))
FASA_TIP_KERNELS(FASA_DECLARE_KERNEL)

// Code of slot t of a q4b column (col: its first block), -8..7.
inline int q4b_code(const uint8_t* col, int t) {
  const int b = t / kTipBlock, j = t % kTipBlock;
  const uint8_t byte = col[b * (kTipBlock / 2) + j % (kTipBlock / 2)];
  return (j < kTipBlock / 2 ? (byte & 15) : (byte >> 4)) - 8;
}

}  // namespace fasa
