#include "fasa/attention/attend.h"

#include <cmath>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "fasa/core/f16.h"
#include "fasa/kernels/ops.h"

namespace fasa {

namespace {

#if defined(__AVX512F__)
// GCC 12 warns falsely inside its own _mm512_cvtph_ps (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

inline const uint8_t* row_ptr(const void* base, int64_t slot, int hd, KvType t) {
  return static_cast<const uint8_t*>(base) + slot * hd * (t == KvType::F16 ? 2 : 4);
}

// Fixed-order dot product: 16 lane sums, then lanes summed in order.
float dot_row(const float* q, const uint8_t* row, int hd, KvType t) {
#if defined(__AVX512F__)
  if (hd % 16 == 0) {
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < hd; i += 16) {
      const __m512 k = t == KvType::F16
                           ? _mm512_cvtph_ps(_mm256_loadu_si256(
                                 reinterpret_cast<const __m256i*>(row + 2 * i)))
                           : _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
      acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), k, acc);
    }
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc);
    float s = 0.0f;
    for (float x : lanes) s += x;
    return s;
  }
#endif
  float s = 0.0f;
  if (t == KvType::F16) {
    const auto* r = reinterpret_cast<const uint16_t*>(row);
    for (int i = 0; i < hd; ++i) s += q[i] * fp16_to_fp32(r[i]);
  } else {
    const auto* r = reinterpret_cast<const float*>(row);
    for (int i = 0; i < hd; ++i) s += q[i] * r[i];
  }
  return s;
}

// out += p * row
void axpy_row(float p, const uint8_t* row, int hd, KvType t, float* out) {
#if defined(__AVX512F__)
  if (hd % 16 == 0) {
    const __m512 pv = _mm512_set1_ps(p);
    for (int i = 0; i < hd; i += 16) {
      const __m512 v = t == KvType::F16
                           ? _mm512_cvtph_ps(_mm256_loadu_si256(
                                 reinterpret_cast<const __m256i*>(row + 2 * i)))
                           : _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
      _mm512_storeu_ps(out + i, _mm512_fmadd_ps(pv, v, _mm512_loadu_ps(out + i)));
    }
    return;
  }
#endif
  if (t == KvType::F16) {
    const auto* r = reinterpret_cast<const uint16_t*>(row);
    for (int i = 0; i < hd; ++i) out[i] += p * fp16_to_fp32(r[i]);
  } else {
    const auto* r = reinterpret_cast<const float*>(row);
    for (int i = 0; i < hd; ++i) out[i] += p * r[i];
  }
}

#if defined(__AVX512F__)
#pragma GCC diagnostic pop
#endif

}  // namespace

void qk_scores(const float* q, const KvRows& rows, const int32_t* slots, int n, float* scores) {
  for (int j = 0; j < n; ++j) {
    const int64_t s = slots ? slots[j] : j;
    scores[j] = dot_row(q, row_ptr(rows.k, s, rows.head_dim, rows.type), rows.head_dim, rows.type);
  }
}

void attend_one(const float* q, const KvRows& rows, const int32_t* slots, int n, float scale,
                float* probs, float* out) {
  const int hd = rows.head_dim;
  qk_scores(q, rows, slots, n, probs);
  for (int j = 0; j < n; ++j) probs[j] *= scale;
  softmax_inplace(probs, n);
  std::memset(out, 0, sizeof(float) * hd);
  for (int j = 0; j < n; ++j) {
    const int64_t s = slots ? slots[j] : j;
    axpy_row(probs[j], row_ptr(rows.v, s, hd, rows.type), hd, rows.type, out);
  }
}

namespace ref {

void attend_one(const float* q, const KvRows& rows, const int32_t* slots, int n, float scale,
                float* probs, float* out) {
  const int hd = rows.head_dim;
  auto load = [&](const void* base, int64_t s, int i) -> double {
    const uint8_t* r = row_ptr(base, s, hd, rows.type);
    return rows.type == KvType::F16 ? fp16_to_fp32(reinterpret_cast<const uint16_t*>(r)[i])
                                    : reinterpret_cast<const float*>(r)[i];
  };
  double mx = -INFINITY;
  for (int j = 0; j < n; ++j) {
    const int64_t s = slots ? slots[j] : j;
    double d = 0.0;
    for (int i = 0; i < hd; ++i) d += q[i] * load(rows.k, s, i);
    probs[j] = static_cast<float>(d * scale);
    mx = std::fmax(mx, probs[j]);
  }
  double sum = 0.0;
  for (int j = 0; j < n; ++j) sum += std::exp(probs[j] - mx);
  for (int j = 0; j < n; ++j) probs[j] = static_cast<float>(std::exp(probs[j] - mx) / sum);
  for (int i = 0; i < hd; ++i) {
    double acc = 0.0;
    for (int j = 0; j < n; ++j) acc += probs[j] * load(rows.v, slots ? slots[j] : j, i);
    out[i] = static_cast<float>(acc);
  }
}

}  // namespace ref

}  // namespace fasa
