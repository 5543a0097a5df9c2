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

// Slot t of a blocked slice, straight from the layout (tip.h): q8b codes column-major in whole
// blocks; q4b block b of column c at 16 (c * n_blocks + b), slot j of the block in byte j % 16,
// low nibble for j < 16.
void tip_scores_q8b(const int8_t* codes, const uint16_t* scale, size_t n_blocks,
                    const TipTerm* terms, int n_terms, int b0, int n, float* scores) {
  for (int r = 0; r < n; ++r) {
    const size_t t = static_cast<size_t>(b0) * 32 + r;
    float s = 0.0f;
    for (int i = 0; i < n_terms; ++i) {
      const size_t c = terms[i].col;
      const float coef = terms[i].coef * fp16_to_fp32(scale[c * n_blocks + t / 32]);
      s = std::fma(coef, static_cast<float>(codes[c * n_blocks * 32 + t]), s);
    }
    scores[r] = s;
  }
}

void tip_scores_q4b(const uint8_t* codes, const uint16_t* scale, size_t n_blocks,
                    const TipTerm* terms, int n_terms, int b0, int n, float* scores) {
  for (int r = 0; r < n; ++r) {
    const size_t t = static_cast<size_t>(b0) * 32 + r;
    float s = 0.0f;
    for (int i = 0; i < n_terms; ++i) {
      const size_t c = terms[i].col, b = t / 32, j = t % 32;
      const uint8_t byte = codes[(c * n_blocks + b) * 16 + j % 16];
      const int code = (j < 16 ? byte & 0x0F : byte >> 4) - 8;
      const float coef = terms[i].coef * fp16_to_fp32(scale[c * n_blocks + b]);
      s = std::fma(coef, static_cast<float>(code), s);
    }
    scores[r] = s;
  }
}

}  // namespace ref

}  // namespace fasa
