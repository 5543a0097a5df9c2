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

// Fixed-order dot product: lane l (of 16) accumulates dims l, l + 16, ... with fused
// multiply-adds, then the lanes are added in a tree: for s = 8, 4, 2, 1: a[l] += a[l + s].
inline float tree16(float* a) {
  for (int s = 8; s >= 1; s /= 2) {
    for (int l = 0; l < s; ++l) a[l] = a[l] + a[l + s];
  }
  return a[0];
}

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
    return tree16(lanes);
  }
#endif
  float lanes[16] = {};
  for (int i = 0; i < hd; ++i) {
    const float k = t == KvType::F16 ? fp16_to_fp32(reinterpret_cast<const uint16_t*>(row)[i])
                                     : reinterpret_cast<const float*>(row)[i];
    lanes[i % 16] = std::fma(q[i], k, lanes[i % 16]);
  }
  return tree16(lanes);
}

#if defined(__AVX512F__)
// Sixteen keys' dot products at once, each exactly dot_row's sequence: the 16 lane vectors are
// reduced together by the same tree (shuffles pair lane l with lane l + s of the same key), and
// the result is permuted into key order. scores: [16]
void dot_rows16(const float* q, const uint8_t* const* rows, int hd, KvType t, float* scores) {
  __m512 acc[16];
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_ps();
  for (int i = 0; i < hd; i += 16) {
    const __m512 qv = _mm512_loadu_ps(q + i);
    for (int j = 0; j < 16; ++j) {
      const __m512 k = t == KvType::F16
                           ? _mm512_cvtph_ps(_mm256_loadu_si256(
                                 reinterpret_cast<const __m256i*>(rows[j] + 2 * i)))
                           : _mm512_loadu_ps(reinterpret_cast<const float*>(rows[j]) + i);
      acc[j] = _mm512_fmadd_ps(qv, k, acc[j]);
    }
  }
  __m512 w[8], x[4], y[2];
  for (int m = 0; m < 8; ++m) {  // s = 8: keys (2m, 2m+1), 8 lanes each
    w[m] = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2 * m], acc[2 * m + 1], 0x44),
                         _mm512_shuffle_f32x4(acc[2 * m], acc[2 * m + 1], 0xEE));
  }
  for (int p = 0; p < 4; ++p) {  // s = 4: quarter k holds key 4p + k
    x[p] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * p], w[2 * p + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(w[2 * p], w[2 * p + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  for (int r = 0; r < 2; ++r) {  // s = 2
    y[r] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * r], x[2 * r + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(x[2 * r], x[2 * r + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // s = 1: lane 4k + p now holds key 4p + k.
  const __m512 z = _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  _mm512_storeu_ps(scores, _mm512_permutexvar_ps(order, z));
}
#endif

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
  int j0 = 0;
#if defined(__AVX512F__)
  if (rows.head_dim % 16 == 0) {
    const uint8_t* ptrs[16];
    for (; j0 + 16 <= n; j0 += 16) {
      for (int j = 0; j < 16; ++j) {
        ptrs[j] = row_ptr(rows.k, slots ? slots[j0 + j] : j0 + j, rows.head_dim, rows.type);
      }
      dot_rows16(q, ptrs, rows.head_dim, rows.type, scores + j0);
    }
  }
#endif
  for (int j = j0; j < n; ++j) {
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
