#include "fasa/kernels/tip.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "fasa/core/f16.h"
#include "fasa/core/isa_intrin.h"
#include "fasa/kernels/isa_api.h"

#include "fasa/core/isa_begin.h"

namespace fasa::FASA_ISA_NS {

namespace {

#include "fasa/kernels/simd_common.inc.h"

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

// ---- the low-bit slices (tip.h): one block of kTipBlock slots at a time; a block's scores go
// to a full block's buffer first when the call ends inside it.

// Blocks whose term coefficients are worked out together (one fp16 vector per term).
constexpr int kCoefBlocks = 8;
constexpr int kMaxStackTerms = 512;  // more terms: the coefficients go to the heap

// cf[i * kCoefBlocks + k] = term i's coefficient in block bb + k (k < nblk): coef_i * the
// (column, block) scale, rounded to fp32.
void block_coefs(const uint16_t* scale, size_t n_blocks, const TipTerm* terms, int n_terms, int bb,
                 int nblk, float* cf) {
  for (int i = 0; i < n_terms; ++i) {
    const uint16_t* d = scale + terms[i].col * n_blocks + bb;
#if FASA_AVX2
    if (nblk == kCoefBlocks) {
      const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d)));
      _mm256_storeu_ps(cf + i * kCoefBlocks, _mm256_mul_ps(_mm256_set1_ps(terms[i].coef), v));
      continue;
    }
#endif
    for (int k = 0; k < nblk; ++k) cf[i * kCoefBlocks + k] = terms[i].coef * half_to_float(d[k]);
  }
}

// Slots [0, len) of block b, one at a time (scalar sets, and the reference's order).
// cf: term i's coefficient at cf[i * kCoefBlocks]
[[maybe_unused]] void q8b_block_scalar(const int8_t* codes, size_t n_blocks, int n_terms,
                                       const TipTerm* terms, int b, const float* cf, int len,
                                       float* out) {
  for (int j = 0; j < len; ++j) {
    float s = 0.0f;
    for (int i = 0; i < n_terms; ++i) {
      const int8_t* col = codes + terms[i].col * n_blocks * kTipBlock;
      s = std::fma(cf[i * kCoefBlocks], static_cast<float>(col[b * kTipBlock + j]), s);
    }
    out[j] = s;
  }
}

[[maybe_unused]] void q4b_block_scalar(const uint8_t* codes, size_t n_blocks, int n_terms,
                                       const TipTerm* terms, int b, const float* cf, int len,
                                       float* out) {
  for (int j = 0; j < len; ++j) {
    float s = 0.0f;
    for (int i = 0; i < n_terms; ++i) {
      const uint8_t* col = codes + terms[i].col * n_blocks * (kTipBlock / 2);
      s = std::fma(cf[i * kCoefBlocks], static_cast<float>(q4b_code(col, b * kTipBlock + j)), s);
    }
    out[j] = s;
  }
}

#if FASA_AVX512
// All kTipBlock slots of block b: two 16-lane accumulators (slots 0-15, 16-31).
void q8b_block(const int8_t* codes, size_t n_blocks, int n_terms, const TipTerm* terms, int b,
               const float* cf, float* out) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  for (int i = 0; i < n_terms; ++i) {
    const int8_t* p = codes + (terms[i].col * n_blocks + b) * kTipBlock;
    const __m512 c = _mm512_set1_ps(cf[i * kCoefBlocks]);
    const __m512 k0 = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    const __m512 k1 = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16))));
    a0 = _mm512_fmadd_ps(c, k0, a0);
    a1 = _mm512_fmadd_ps(c, k1, a1);
  }
  _mm512_storeu_ps(out, a0);
  _mm512_storeu_ps(out + 16, a1);
}

void q4b_block(const uint8_t* codes, size_t n_blocks, int n_terms, const TipTerm* terms, int b,
               const float* cf, float* out) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  // code = nibble - 8 as a float, looked up by the nibble (permutexvar reads an index's low 4
  // bits, so the low nibble needs no mask)
  const __m512 lut = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  for (int i = 0; i < n_terms; ++i) {
    const uint8_t* p = codes + (terms[i].col * n_blocks + b) * (kTipBlock / 2);
    const __m512 c = _mm512_set1_ps(cf[i * kCoefBlocks]);
    const __m512i w = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m512 k0 = _mm512_permutexvar_ps(w, lut);
    const __m512 k1 = _mm512_permutexvar_ps(_mm512_srli_epi32(w, 4), lut);
    a0 = _mm512_fmadd_ps(c, k0, a0);
    a1 = _mm512_fmadd_ps(c, k1, a1);
  }
  _mm512_storeu_ps(out, a0);
  _mm512_storeu_ps(out + 16, a1);
}
#elif FASA_AVX2
// All kTipBlock slots of block b: four 8-lane accumulators (slots 0-7, 8-15, 16-23, 24-31).
void q8b_block(const int8_t* codes, size_t n_blocks, int n_terms, const TipTerm* terms, int b,
               const float* cf, float* out) {
  __m256 a[4];
  for (auto& x : a) x = _mm256_setzero_ps();
  for (int i = 0; i < n_terms; ++i) {
    const int8_t* p = codes + (terms[i].col * n_blocks + b) * kTipBlock;
    const __m256 c = _mm256_set1_ps(cf[i * kCoefBlocks]);
    for (int v = 0; v < 4; ++v) {
      const __m256 k = _mm256_cvtepi32_ps(
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * v))));
      a[v] = _mm256_fmadd_ps(c, k, a[v]);
    }
  }
  for (int v = 0; v < 4; ++v) _mm256_storeu_ps(out + 8 * v, a[v]);
}

void q4b_block(const uint8_t* codes, size_t n_blocks, int n_terms, const TipTerm* terms, int b,
               const float* cf, float* out) {
  __m256 a[4];
  for (auto& x : a) x = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi32(15), eight = _mm256_set1_epi32(8);
  for (int i = 0; i < n_terms; ++i) {
    const uint8_t* p = codes + (terms[i].col * n_blocks + b) * (kTipBlock / 2);
    const __m256 c = _mm256_set1_ps(cf[i * kCoefBlocks]);
    for (int h = 0; h < 2; ++h) {  // bytes 8h..8h+7: slots 8h.. (low nibbles), 16+8h.. (high)
      const __m256i w =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * h)));
      const __m256 lo = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(w, low), eight));
      const __m256 hi = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(w, 4), eight));
      a[h] = _mm256_fmadd_ps(c, lo, a[h]);
      a[2 + h] = _mm256_fmadd_ps(c, hi, a[2 + h]);
    }
  }
  for (int v = 0; v < 4; ++v) _mm256_storeu_ps(out + 8 * v, a[v]);
}
#else
void q8b_block(const int8_t* codes, size_t n_blocks, int n_terms, const TipTerm* terms, int b,
               const float* cf, float* out) {
  q8b_block_scalar(codes, n_blocks, n_terms, terms, b, cf, kTipBlock, out);
}
void q4b_block(const uint8_t* codes, size_t n_blocks, int n_terms, const TipTerm* terms, int b,
               const float* cf, float* out) {
  q4b_block_scalar(codes, n_blocks, n_terms, terms, b, cf, kTipBlock, out);
}
#endif

// Blocks b0.. until n slots are scored, kCoefBlocks at a time (their coefficients first); a
// partial last block through a block-sized buffer.
template <typename Codes, typename Block>
void blocked_tip(const Codes* codes, const uint16_t* scale, size_t n_blocks, const TipTerm* terms,
                 int n_terms, int b0, int n, float* scores, Block block) {
  float stack[kMaxStackTerms * kCoefBlocks];
  std::vector<float> heap;
  float* cf = stack;  // [n_terms, kCoefBlocks]
  if (n_terms > kMaxStackTerms) {
    heap.resize(static_cast<size_t>(n_terms) * kCoefBlocks);
    cf = heap.data();
  }
  const int n_blk = (n + kTipBlock - 1) / kTipBlock;
  for (int k0 = 0; k0 < n_blk; k0 += kCoefBlocks) {
    const int nblk = std::min(kCoefBlocks, n_blk - k0);
    block_coefs(scale, n_blocks, terms, n_terms, b0 + k0, nblk, cf);
    for (int k = 0; k < nblk; ++k) {
      const int t = (k0 + k) * kTipBlock, b = b0 + k0 + k;
      if (n - t >= kTipBlock) {
        block(codes, n_blocks, n_terms, terms, b, cf + k, scores + t);
        continue;
      }
      float tmp[kTipBlock];
      block(codes, n_blocks, n_terms, terms, b, cf + k, tmp);
      std::copy(tmp, tmp + (n - t), scores + t);
    }
  }
}

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

void tip_scores_q8b(const int8_t* codes, const uint16_t* scale, size_t n_blocks,
                    const TipTerm* terms, int n_terms, int b0, int n, float* scores) {
  blocked_tip(codes, scale, n_blocks, terms, n_terms, b0, n, scores, q8b_block);
}

void tip_scores_q4b(const uint8_t* codes, const uint16_t* scale, size_t n_blocks,
                    const TipTerm* terms, int n_terms, int b0, int n, float* scores) {
  blocked_tip(codes, scale, n_blocks, terms, n_terms, b0, n, scores, q4b_block);
}

#if FASA_AVX512
#pragma GCC diagnostic pop
#endif

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
