// TIP scoring (FASA): a query head's partial logits over a packed, column-major slice of keys.
// Column c of the slice holds one key dim for every slot, so scoring streams whole cache lines
// of consecutive slots and vectorizes over slots without horizontal sums.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fasa/kernels/kernel_list.h"
namespace fasa {

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
#define FASA_TIP_KERNELS(X)                                                                 \
  X(void, tip_scores,                                                                       \
    (const void* packed, bool f16, size_t stride, const TipTerm* terms, int n_terms, int n, \
     float* scores),                                                                        \
    (packed, f16, stride, terms, n_terms, n, scores))                                       \
  X(void, tip_scores_q8,                                                                    \
    (const int8_t* packed, const uint16_t* scale, size_t stride, const TipTerm* terms,      \
     int n_terms, int n, float* scores),                                                    \
    (packed, scale, stride, terms, n_terms, n, scores))
FASA_TIP_KERNELS(FASA_DECLARE_KERNEL)

}  // namespace fasa
