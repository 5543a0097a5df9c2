#include "fasa/kernels/select.h"

#include <algorithm>
#include <cstring>

#include "fasa/core/isa_intrin.h"
#include "fasa/kernels/isa_api.h"

#include "fasa/core/isa_begin.h"

namespace fasa::FASA_ISA_NS {

namespace {

#if FASA_AVX512
// GCC 12 warns falsely inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// Order-preserving keys: a < b (as floats, no NaN) implies key(a) < key(b); -0 sorts below +0.
inline uint32_t key_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

inline float value_of(uint32_t k) {
  const uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

#if FASA_AVX512
inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
}
#endif

// Keys >= t among k[0..n).
inline int64_t count_ge(const uint32_t* k, int64_t n, uint32_t t) {
#if FASA_AVX512
  const __m512i vt = _mm512_set1_epi32(static_cast<int>(t));
  int64_t c = 0;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 live = tail_mask(n - i);
    c += __builtin_popcount(
        _mm512_mask_cmpge_epu32_mask(live, _mm512_maskz_loadu_epi32(live, k + i), vt));
  }
  return c;
#else
  int32_t c = 0;  // n < 2^31; 32-bit lanes vectorize
  for (int64_t i = 0; i < n; ++i) c += k[i] >= t ? 1 : 0;
  return c;
#endif
}

// Keys of k[0..n) with (key & mask) == want, in order, to out; returns how many.
int64_t keep_where(const uint32_t* k, int64_t n, uint32_t mask, uint32_t want, uint32_t* out) {
  int64_t kept = 0, i = 0;
#if FASA_AVX512
  const __m512i vm = _mm512_set1_epi32(static_cast<int>(mask));
  const __m512i vw = _mm512_set1_epi32(static_cast<int>(want));
  for (; i < n; i += 16) {
    const __mmask16 live = tail_mask(n - i);
    const __m512i v = _mm512_maskz_loadu_epi32(live, k + i);
    const __mmask16 m = _mm512_mask_cmpeq_epu32_mask(live, _mm512_and_si512(v, vm), vw);
    _mm512_mask_compressstoreu_epi32(out + kept, m, v);
    kept += __builtin_popcount(m);
  }
#endif
  for (; i < n; ++i) {
    out[kept] = k[i];
    kept += (k[i] & mask) == want ? 1 : 0;
  }
  return kept;
}

// Extends t (the bits above `bit` fixed, the rest zero) bit by bit down to bit `low`: the
// largest such t' with at least r keys of k[0..n) >= t'.
uint32_t extend(const uint32_t* k, int64_t n, int64_t r, uint32_t t, int bit, int low) {
  for (; bit >= low; --bit) {
    const uint32_t c = t | (1u << bit);
    if (count_ge(k, n, c) >= r) t = c;
  }
  return t;
}

// The r-th largest of k[0..n) (1 <= r <= n): its upper half over all keys, then its lower half
// among the keys that share that upper half. small: scratch [n + 16].
uint32_t rth_largest_key(const uint32_t* k, int64_t n, int64_t r, uint32_t* small) {
  const uint32_t hi = extend(k, n, r, 0, 31, 16);
  const int64_t above = hi == 0xffff0000u ? 0 : count_ge(k, n, hi + 0x10000u);  // r > above
  const int64_t ns = keep_where(k, n, 0xffff0000u, hi, small);
  return extend(small, ns, r - above, hi, 15, 0);  // its rank among them: r - above
}

// keys[i] = key_of(a[i] + b[i]) (of a[i] alone without kSum) for the i with that key >= bound
// (all when bound = 0), in order; returns how many.
template <bool kSum>
int64_t keys_ge(const float* a, const float* b, int64_t n, uint32_t bound, uint32_t* keys) {
  int64_t kept = 0, i = 0;
#if FASA_AVX512
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512i vb = _mm512_set1_epi32(static_cast<int>(bound));
  for (; i < n; i += 16) {
    const __mmask16 live = tail_mask(n - i);
    __m512 s = _mm512_maskz_loadu_ps(live, a + i);
    if constexpr (kSum) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(live, b + i));
    const __m512i u = _mm512_castps_si512(s);
    const __mmask16 neg = _mm512_test_epi32_mask(u, sign);
    const __m512i key = _mm512_mask_xor_epi32(_mm512_or_si512(u, sign), neg, u,
                                              _mm512_set1_epi32(-1));  // ~u where negative
    const __mmask16 m = _mm512_mask_cmpge_epu32_mask(live, key, vb);
    _mm512_mask_compressstoreu_epi32(keys + kept, m, key);
    kept += __builtin_popcount(m);
  }
#endif
  for (; i < n; ++i) {
    if constexpr (kSum) {
      keys[kept] = key_of(a[i] + b[i]);
    } else {
      keys[kept] = key_of(a[i]);
    }
    kept += keys[kept] >= bound ? 1 : 0;
  }
  return kept;
}

template <bool kSum>
float rth_largest_of(const float* a, const float* b, int64_t n, int64_t r, float* scratch) {
  uint32_t* keys = reinterpret_cast<uint32_t*>(scratch);  // [n + 16]
  uint32_t* small = keys + n + 16;                        // [n]
  constexpr int64_t kStride = 8;
  if (n >= 16 * kStride && r * 4 <= n) {
    // The upper half of a rank below r's among every 8th value bounds the r-th largest from
    // below when at least r keys pass it (then the r-th largest is among them).
    const int64_t m = n / kStride, rm = std::min(m, r / kStride + 3);
    for (int64_t i = 0; i < m; ++i) {
      small[i] = key_of(kSum ? a[i * kStride] + b[i * kStride] : a[i * kStride]);
    }
    const uint32_t bound = extend(small, m, rm, 0, 31, 16);
    const int64_t kept = keys_ge<kSum>(a, b, n, bound, keys);
    if (kept >= r) return value_of(rth_largest_key(keys, kept, r, small));
  }
  keys_ge<kSum>(a, b, n, 0, keys);
  return value_of(rth_largest_key(keys, n, r, small));
}

}  // namespace

float sum_rth_largest(const float* a, const float* b, int64_t n, int64_t r, float* scratch) {
  return rth_largest_of<true>(a, b, n, r, scratch);
}

float rth_largest(const float* v, int64_t n, int64_t r, float* scratch) {
  return rth_largest_of<false>(v, nullptr, n, r, scratch);
}

#if FASA_AVX512
#pragma GCC diagnostic pop
#endif

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
