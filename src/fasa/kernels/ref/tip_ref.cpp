// Reference TIP scores, double accumulation, for tests.
#include <cstddef>

#include "fasa/core/f16.h"
#include "fasa/kernels/tip.h"

namespace fasa {

namespace {

float load(const void* packed, bool f16, size_t i) {
  return f16 ? fp16_to_fp32(static_cast<const uint16_t*>(packed)[i])
             : static_cast<const float*>(packed)[i];
}

}  // namespace

namespace ref {

void tip_scores(const void* packed, bool f16, size_t stride, const TipTerm* terms, int n_terms,
                int n, float* scores) {
  for (int t = 0; t < n; ++t) {
    double s = 0.0;
    for (int i = 0; i < n_terms; ++i) {
      s += static_cast<double>(terms[i].coef) * load(packed, f16, terms[i].col * stride + t);
    }
    scores[t] = static_cast<float>(s);
  }
}

}  // namespace ref

}  // namespace fasa
