// Reference TIP scores, double accumulation, for tests.
#include <cmath>
#include <cstddef>

#include "fasa/core/f16.h"
#include "fasa/kernels/tip.h"
#include "support/ref/kernels_ref.h"

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

void tip_scores_q8(const int8_t* packed, const uint16_t* scale, size_t stride, const TipTerm* terms,
                   int n_terms, int n, float* scores) {
  for (int t = 0; t < n; ++t) {
    float s = 0.0f;
    for (int i = 0; i < n_terms; ++i) {
      s = std::fma(terms[i].coef, static_cast<float>(packed[terms[i].col * stride + t]), s);
    }
    scores[t] = s * fp16_to_fp32(scale[t]);
  }
}

}  // namespace ref

}  // namespace fasa
