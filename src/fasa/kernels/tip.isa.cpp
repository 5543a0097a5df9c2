#include "fasa/kernels/tip.h"

#include <cmath>

#include "fasa/core/f16.h"
#include "fasa/core/isa_intrin.h"
#include "fasa/kernels/isa_api.h"

#include "fasa/core/isa_begin.h"

namespace fasa::FASA_ISA_NS {

namespace {

inline float load(const void* packed, bool f16, size_t i) {
  return f16 ? fp16_to_fp32(static_cast<const uint16_t*>(packed)[i])
             : static_cast<const float*>(packed)[i];
}

// Slots [t0, n) one at a time, with the same fused multiply-adds as the vector lanes.
void tip_tail(const void* packed, bool f16, size_t stride, const TipTerm* terms, int n_terms,
              int t0, int n, float* scores) {
  for (int t = t0; t < n; ++t) {
    float s = 0.0f;
    for (int i = 0; i < n_terms; ++i) {
      s = std::fma(terms[i].coef, load(packed, f16, terms[i].col * stride + t), s);
    }
    scores[t] = s;
  }
}

#if FASA_AVX512
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// ---- tip_scores' vector passes: slots [t, t + NV * lanes), NV accumulators of lanes slots,
// each slot the terms' fused multiply-adds in term order (as tip_tail). scores: [n]

#if FASA_AVX512
// Slots [at, at + 16) of the packed rows as fp32.
[[gnu::always_inline]] inline __m512 load16(const void* packed, bool f16, size_t at) {
  if (f16) {
    const auto* p = static_cast<const uint16_t*>(packed) + at;
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  return _mm512_loadu_ps(static_cast<const float*>(packed) + at);
}

template <int NV>
[[gnu::always_inline]] inline void tip_pass(const void* packed, bool f16, size_t stride,
                                            const TipTerm* terms, int n_terms, int t,
                                            float* scores) {
  __m512 a[NV];
  for (int v = 0; v < NV; ++v) a[v] = _mm512_setzero_ps();
  for (int i = 0; i < n_terms; ++i) {
    const __m512 c = _mm512_set1_ps(terms[i].coef);
    const size_t at = terms[i].col * stride + t;
    for (int v = 0; v < NV; ++v) a[v] = _mm512_fmadd_ps(c, load16(packed, f16, at + 16 * v), a[v]);
  }
  for (int v = 0; v < NV; ++v) _mm512_storeu_ps(scores + t + 16 * v, a[v]);
}
#elif FASA_AVX2
// Slots [at, at + 8) of the packed rows as fp32.
[[gnu::always_inline]] inline __m256 load8(const void* packed, bool f16, size_t at) {
  if (f16) {
    const auto* p = static_cast<const uint16_t*>(packed) + at;
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  return _mm256_loadu_ps(static_cast<const float*>(packed) + at);
}

template <int NV>
[[gnu::always_inline]] inline void tip_pass(const void* packed, bool f16, size_t stride,
                                            const TipTerm* terms, int n_terms, int t,
                                            float* scores) {
  __m256 a[NV];
  for (int v = 0; v < NV; ++v) a[v] = _mm256_setzero_ps();
  for (int i = 0; i < n_terms; ++i) {
    const __m256 c = _mm256_set1_ps(terms[i].coef);
    const size_t at = terms[i].col * stride + t;
    for (int v = 0; v < NV; ++v) a[v] = _mm256_fmadd_ps(c, load8(packed, f16, at + 8 * v), a[v]);
  }
  for (int v = 0; v < NV; ++v) _mm256_storeu_ps(scores + t + 8 * v, a[v]);
}
#endif

}  // namespace

void tip_scores(const void* packed, bool f16, size_t stride, const TipTerm* terms, int n_terms,
                int n, float* scores) {
  int t = 0;
#if FASA_AVX512
  // 32 slots per pass (two accumulators), then 16, then the scalar tail.
  for (; t + 32 <= n; t += 32) tip_pass<2>(packed, f16, stride, terms, n_terms, t, scores);
  for (; t + 16 <= n; t += 16) tip_pass<1>(packed, f16, stride, terms, n_terms, t, scores);
#elif FASA_AVX2
  // 16 slots per pass (two 8-lane accumulators), then the scalar tail.
  for (; t + 16 <= n; t += 16) tip_pass<2>(packed, f16, stride, terms, n_terms, t, scores);
#endif
  tip_tail(packed, f16, stride, terms, n_terms, t, n, scores);
}

void tip_scores_q8(const int8_t* packed, const uint16_t* scale, size_t stride, const TipTerm* terms,
                   int n_terms, int n, float* scores) {
  int t = 0;
#if FASA_AVX512
  for (; t + 16 <= n; t += 16) {
    __m512 a = _mm512_setzero_ps();
    for (int i = 0; i < n_terms; ++i) {
      const int8_t* p = packed + terms[i].col * stride + t;
      const __m512 k = _mm512_cvtepi32_ps(
          _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
      a = _mm512_fmadd_ps(_mm512_set1_ps(terms[i].coef), k, a);
    }
    const __m512 d =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scale + t)));
    _mm512_storeu_ps(scores + t, _mm512_mul_ps(a, d));
  }
#elif FASA_AVX2
  for (; t + 8 <= n; t += 8) {
    __m256 a = _mm256_setzero_ps();
    for (int i = 0; i < n_terms; ++i) {
      const int8_t* p = packed + terms[i].col * stride + t;
      const __m256 k = _mm256_cvtepi32_ps(
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
      a = _mm256_fmadd_ps(_mm256_set1_ps(terms[i].coef), k, a);
    }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scale + t)));
    _mm256_storeu_ps(scores + t, _mm256_mul_ps(a, d));
  }
#endif
  for (; t < n; ++t) {
    float s = 0.0f;
    for (int i = 0; i < n_terms; ++i) {
      s = std::fma(terms[i].coef, static_cast<float>(packed[terms[i].col * stride + t]), s);
    }
    scores[t] = s * fp16_to_fp32(scale[t]);
  }
}

#if FASA_AVX512
#pragma GCC diagnostic pop
#endif

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
