#include "fasa/kernels/ops.h"

#include <cmath>
#include "fasa/core/isa_intrin.h"
#include "fasa/kernels/isa_api.h"

#include "fasa/core/isa_begin.h"

namespace fasa::FASA_ISA_NS {

const char* rope_layout_name(RopeLayout layout) {
  return layout == RopeLayout::Norm ? "norm" : "neox";
}

void rmsnorm(const float* x, const float* w, float eps, int64_t n, float* y) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void rope_freqs(float base, int64_t rope_dim, float* freqs) {
  for (int64_t i = 0; i < rope_dim / 2; ++i) {
    freqs[i] = static_cast<float>(
        std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / rope_dim));
  }
}

void rope_apply(float* v, int64_t head_dim, int64_t rope_dim, RopeLayout layout, int64_t pos,
                const float* freqs) {
  const int64_t n_pairs = rope_dim / 2;
  for (int64_t i = 0; i < n_pairs; ++i) {
    const double angle = static_cast<double>(pos) * freqs[i];
    const float c = static_cast<float>(std::cos(angle));
    const float s = static_cast<float>(std::sin(angle));
    const int64_t a = layout == RopeLayout::Norm ? 2 * i : i;
    const int64_t b = layout == RopeLayout::Norm ? 2 * i + 1 : i + n_pairs;
    const float x0 = v[a];
    const float x1 = v[b];
    v[a] = x0 * c - x1 * s;
    v[b] = x0 * s + x1 * c;
  }
  (void)head_dim;
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

#if FASA_AVX512
// GCC 12 warns falsely inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace {

// e^x for softmax inputs (x <= 0 after the max is subtracted; below -104 the result is 0):
// n = round(x log2 e), r = x - n ln2 (in two steps), e^r by its degree-7 Taylor polynomial
// (Horner, fused multiply-adds), times 2^n. The portable and AVX-512 forms perform the same fp32
// operations, so they give the same bits; within 2 ulp of expf (tested).
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693145751953125f;        // ln 2, high bits (exact times small n)
constexpr float kLn2Lo = 1.42860676533018690e-06f;  // ln 2 - kLn2Hi
constexpr float kExpC[8] = {1.0f,         1.0f,          0.5f,          1.0f / 6.0f,
                            1.0f / 24.0f, 1.0f / 120.0f, 1.0f / 720.0f, 1.0f / 5040.0f};
constexpr float kExpMin = -104.0f;

constexpr float kLn2F = 0.693147182464599609375f;  // ln 2 rounded to float (one-step form)

// exp_portable below, and exp4_portable for exp_sum_fast: e^t to 3.5e-6 relative (t <= 0; 0
// below -104) with one reduction step (|n| <= 150 costs under 3e-7) and a degree-4 minimax
// polynomial on [-ln2 / 2, ln2 / 2]; the same shape, fewer operations.
constexpr float kMassC[5] = {0.9999992847442627f, 0.9999634027481079f, 0.5000435709953308f,
                             0.16790907084941864f, 0.0414586067199707f};

// e^x with the polynomial c[0..kDeg] and one or two reduction steps (kTwoStep).
template <int kDeg, bool kTwoStep>
inline float exp_poly_portable(float x, const float* c) {
  x = x < kExpMin ? kExpMin : x;
  const float n = std::nearbyint(x * kLog2e);
  float r = std::fma(n, kTwoStep ? -kLn2Hi : -kLn2F, x);
  if constexpr (kTwoStep) r = std::fma(n, -kLn2Lo, r);
  float p = c[kDeg];
  for (int k = kDeg - 1; k >= 0; --k) p = std::fma(p, r, c[k]);
  return std::ldexp(p, static_cast<int>(n));
}
inline float exp_portable(float x) { return exp_poly_portable<7, true>(x, kExpC); }
inline float exp4_portable(float t) { return exp_poly_portable<4, false>(t, kMassC); }

#if FASA_AVX512
template <int kDeg, bool kTwoStep>
inline __m512 exp_poly_avx512(__m512 x, const float* c) {
  x = _mm512_max_ps(x, _mm512_set1_ps(kExpMin));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(kTwoStep ? -kLn2Hi : -kLn2F), x);
  if constexpr (kTwoStep) r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Lo), r);
  __m512 p = _mm512_set1_ps(c[kDeg]);
  for (int k = kDeg - 1; k >= 0; --k) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c[k]));
  return _mm512_scalef_ps(p, n);
}
inline __m512 exp_avx512(__m512 x) { return exp_poly_avx512<7, true>(x, kExpC); }
inline __m512 exp4_avx512(__m512 t) { return exp_poly_avx512<4, false>(t, kMassC); }
#elif FASA_AVX2
// exp_poly_portable in 8 lanes. ldexp(p, n) as (p * 2^(n + 64)) * 2^-64: the first product is
// exact (a normal float for n in [-150, 63], the range of x in [-104, 43]); the second rounds
// once, as ldexp does, when the result is subnormal.
template <int kDeg, bool kTwoStep>
inline __m256 exp_poly_avx2(__m256 x, const float* c) {
  x = _mm256_max_ps(x, _mm256_set1_ps(kExpMin));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(kTwoStep ? -kLn2Hi : -kLn2F), x);
  if constexpr (kTwoStep) r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Lo), r);
  __m256 p = _mm256_set1_ps(c[kDeg]);
  for (int k = kDeg - 1; k >= 0; --k) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c[k]));
  const __m256i biased = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(64 + 127));
  const __m256 pow2 = _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23));  // 2^(n + 64)
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2), _mm256_set1_ps(0x1p-64f));
}
inline __m256 exp_avx2(__m256 x) { return exp_poly_avx2<7, true>(x, kExpC); }
inline __m256 exp4_avx2(__m256 t) { return exp_poly_avx2<4, false>(t, kMassC); }
#endif

// The fixed sum of 16 lanes: for s = 8, 4, 2, 1: a[l] += a[l + s].
template <class T>
inline T tree16(T* a) {
  for (int s = 8; s >= 1; s /= 2) {
    for (int l = 0; l < s; ++l) a[l] = a[l] + a[l + s];
  }
  return a[0];
}

}  // namespace

float softmax_exp(float x) { return exp_portable(x); }

void softmax_exp_shifted(const float* x, float m, int64_t n, float* e) {
  int64_t i = 0;
#if FASA_AVX512
  const __m512 vm = _mm512_set1_ps(m);
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(e + i, exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm)));
  }
#elif FASA_AVX2
  const __m256 vm = _mm256_set1_ps(m);
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(e + i, exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm)));
  }
#endif
  for (; i < n; ++i) e[i] = exp_portable(x[i] - m);
}

// The maximum is exact whatever the order (ties of +0 and -0 aside, which exp(x - max) does
// not tell apart), so lanes may take it in any order.
float max_value(const float* x, int64_t n) {
  float mx = x[0];
  int64_t i = 0;
#if FASA_AVX512
  if (n >= 16) {
    __m512 v = _mm512_loadu_ps(x);
    for (i = 16; i + 16 <= n; i += 16) v = _mm512_max_ps(v, _mm512_loadu_ps(x + i));
    mx = _mm512_reduce_max_ps(v);
  }
#elif FASA_AVX2
  if (n >= 8) {
    __m256 v = _mm256_loadu_ps(x);
    for (i = 8; i + 8 <= n; i += 8) v = _mm256_max_ps(v, _mm256_loadu_ps(x + i));
    float lanes[8];
    _mm256_storeu_ps(lanes, v);
    mx = lanes[0];
    for (int l = 1; l < 8; ++l) mx = lanes[l] > mx ? lanes[l] : mx;
  }
#endif
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  return mx;
}

namespace {

// The exps of a softmax and their sum: e_i = softmax_exp(x_i * a - m) (x_i * a rounds before m
// is subtracted), stored to e unless it is null (e == x allowed); the sum in double over 16
// lanes (lane = i mod 16, in order of i), then the lanes by tree16.
double exp_lanes(const float* x, float a, float m, int64_t n, float* e) {
  double lanes[16] = {};
  int64_t i = 0;
#if FASA_AVX512
  const __m512 va = _mm512_set1_ps(a), vm = _mm512_set1_ps(m);
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (; i + 16 <= n; i += 16) {
    const __m512 v = exp_avx512(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), va), vm));
    if (e) _mm512_storeu_ps(e + i, v);
    lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    hi = _mm512_add_pd(hi, _mm512_cvtps_pd(
                               _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
  }
  _mm512_storeu_pd(lanes, lo);
  _mm512_storeu_pd(lanes + 8, hi);
#elif FASA_AVX2
  const __m256 va = _mm256_set1_ps(a), vm = _mm256_set1_ps(m);
  __m256d l0 = _mm256_setzero_pd(), l1 = _mm256_setzero_pd();  // lanes 0-3, 4-7
  __m256d l2 = _mm256_setzero_pd(), l3 = _mm256_setzero_pd();  // lanes 8-11, 12-15
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = exp_avx2(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), va), vm));
    const __m256 v1 = exp_avx2(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), va), vm));
    if (e) {
      _mm256_storeu_ps(e + i, v0);
      _mm256_storeu_ps(e + i + 8, v1);
    }
    l0 = _mm256_add_pd(l0, _mm256_cvtps_pd(_mm256_castps256_ps128(v0)));
    l1 = _mm256_add_pd(l1, _mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1)));
    l2 = _mm256_add_pd(l2, _mm256_cvtps_pd(_mm256_castps256_ps128(v1)));
    l3 = _mm256_add_pd(l3, _mm256_cvtps_pd(_mm256_extractf128_ps(v1, 1)));
  }
  _mm256_storeu_pd(lanes, l0);
  _mm256_storeu_pd(lanes + 4, l1);
  _mm256_storeu_pd(lanes + 8, l2);
  _mm256_storeu_pd(lanes + 12, l3);
#endif
  for (; i < n; ++i) {
    const float v = exp_portable(x[i] * a - m);
    if (e) e[i] = v;
    lanes[i % 16] += v;
  }
  return tree16(lanes);
}

}  // namespace

double exp_sum_scaled(const float* x, float a, float m, int64_t n) {
  return exp_lanes(x, a, m, n, nullptr);
}

// In float over 16 lanes (lane = i mod 16, in order of i), then the lanes by tree16.
float exp_sum_fast(const float* x, float a, float m, int64_t n) {
  float lanes[16] = {};
  int64_t i = 0;
#if FASA_AVX512
  const __m512 va = _mm512_set1_ps(a), vm = _mm512_set1_ps(m);
  __m512 acc = _mm512_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc = _mm512_add_ps(acc, exp4_avx512(_mm512_fmsub_ps(_mm512_loadu_ps(x + i), va, vm)));
  }
  _mm512_storeu_ps(lanes, acc);
#elif FASA_AVX2
  const __m256 va = _mm256_set1_ps(a), vm = _mm256_set1_ps(m);
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();  // lanes 0-7, 8-15
  for (; i + 16 <= n; i += 16) {
    lo = _mm256_add_ps(lo, exp4_avx2(_mm256_fmsub_ps(_mm256_loadu_ps(x + i), va, vm)));
    hi = _mm256_add_ps(hi, exp4_avx2(_mm256_fmsub_ps(_mm256_loadu_ps(x + i + 8), va, vm)));
  }
  _mm256_storeu_ps(lanes, lo);
  _mm256_storeu_ps(lanes + 8, hi);
#endif
  for (; i < n; ++i) lanes[i % 16] += exp4_portable(std::fma(x[i], a, -m));
  return tree16(lanes);
}

// y_i = e_i * (1 / sum), the reciprocal rounded to float once.
void softmax_scaled(const float* x, float a, float m, int64_t n, float* y) {
  if (n <= 0) return;
  const float inv = static_cast<float>(1.0 / exp_lanes(x, a, m, n, y));
  for (int64_t j = 0; j < n; ++j) y[j] *= inv;
}

// e_i = exp(x_i - max) (x * 1 is x), summed as exp_lanes sums; x_i = e_i * (1 / sum).
void softmax_inplace(float* x, int64_t n) {
  if (n <= 0) return;
  softmax_scaled(x, 1.0f, max_value(x, n), n, x);
}

// gelu(x) * u with 0.5 x (1 + tanh(z)) = x / (1 + e^(-2z)), z = sqrt(2 / pi) (x + 0.044715 x^3):
// no cancellation for negative x, and e^t by the exp above, with t clamped to [-104, 43] (the
// range every form of it covers; beyond it the product is x * u, or below 1e-17 * |x * u|).
// The vector and scalar forms perform the same fp32 operations: the same bits.
namespace {
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;
constexpr float kGeluTMax = 43.0f;

inline float gelu_mul_portable(float x, float u) {
  const float x3 = x * x * x;
  float t = -2.0f * (kGeluC * (x + kGeluA * x3));
  t = t > kGeluTMax ? kGeluTMax : t;
  return (x * u) / (1.0f + exp_portable(t));
}
}  // namespace

// silu(x) * u = x u / (1 + e^(-x)), e^t by the exp above with t = -x clamped to 43 (below
// x = -43 both it and the true product are under e^-43 |x u| = 2.2e-19 |x u|). The vector and
// scalar forms perform the same fp32 operations: the same bits.
namespace {
inline float silu_mul_portable(float x, float u) {
  float t = -x;
  t = t > kGeluTMax ? kGeluTMax : t;
  return (x * u) / (1.0f + exp_portable(t));
}
}  // namespace

void silu_mul(const float* g, const float* u, int64_t n, float* h) {
  int64_t i = 0;
#if FASA_AVX512
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(g + i);
    const __m512 t =
        _mm512_min_ps(_mm512_sub_ps(_mm512_setzero_ps(), x), _mm512_set1_ps(kGeluTMax));
    const __m512 den = _mm512_add_ps(_mm512_set1_ps(1.0f), exp_avx512(t));
    _mm512_storeu_ps(h + i, _mm512_div_ps(_mm512_mul_ps(x, _mm512_loadu_ps(u + i)), den));
  }
#elif FASA_AVX2
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(g + i);
    const __m256 t =
        _mm256_min_ps(_mm256_sub_ps(_mm256_setzero_ps(), x), _mm256_set1_ps(kGeluTMax));
    const __m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f), exp_avx2(t));
    _mm256_storeu_ps(h + i, _mm256_div_ps(_mm256_mul_ps(x, _mm256_loadu_ps(u + i)), den));
  }
#endif
  for (; i < n; ++i) h[i] = silu_mul_portable(g[i], u[i]);
}

void gelu_tanh_mul(const float* g, const float* u, int64_t n, float* h) {
  int64_t i = 0;
#if FASA_AVX512
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(g + i);
    const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    const __m512 inner = _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps(kGeluA), x3));
    __m512 t = _mm512_mul_ps(_mm512_set1_ps(-2.0f), _mm512_mul_ps(_mm512_set1_ps(kGeluC), inner));
    t = _mm512_min_ps(t, _mm512_set1_ps(kGeluTMax));
    const __m512 den = _mm512_add_ps(_mm512_set1_ps(1.0f), exp_avx512(t));
    _mm512_storeu_ps(h + i, _mm512_div_ps(_mm512_mul_ps(x, _mm512_loadu_ps(u + i)), den));
  }
#elif FASA_AVX2
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(g + i);
    const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    const __m256 inner = _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps(kGeluA), x3));
    __m256 t = _mm256_mul_ps(_mm256_set1_ps(-2.0f), _mm256_mul_ps(_mm256_set1_ps(kGeluC), inner));
    t = _mm256_min_ps(t, _mm256_set1_ps(kGeluTMax));
    const __m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f), exp_avx2(t));
    _mm256_storeu_ps(h + i, _mm256_div_ps(_mm256_mul_ps(x, _mm256_loadu_ps(u + i)), den));
  }
#endif
  for (; i < n; ++i) h[i] = gelu_mul_portable(g[i], u[i]);
}

#if FASA_AVX512
#pragma GCC diagnostic pop
#endif

namespace detail {
void softmax_portable(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  double lanes[16] = {};
  for (int64_t i = 0; i < n; ++i) {
    x[i] = exp_portable(x[i] - mx);
    lanes[i % 16] += x[i];
  }
  const float inv = static_cast<float>(1.0 / tree16(lanes));
  for (int64_t j = 0; j < n; ++j) x[j] *= inv;
}
}  // namespace detail

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
