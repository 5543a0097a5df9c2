#include "fasa/kernels/attend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "fasa/core/f16.h"
#include "fasa/core/isa_intrin.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/isa_api.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/q8_0.h"

#include "fasa/core/isa_begin.h"

namespace fasa::FASA_ISA_NS {

namespace {

#include "fasa/kernels/simd_common.inc.h"

#if FASA_AVX512
// GCC 12 warns falsely inside its own _mm512_cvtph_ps (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

inline size_t row_size(int hd, KvType t) {
  return t == KvType::Q8_0 ? q8_0_row_bytes(hd)
                           : static_cast<size_t>(hd) * (t == KvType::F16 ? 2 : 4);
}

inline const uint8_t* row_ptr(const void* base, int64_t slot, int hd, KvType t) {
  return static_cast<const uint8_t*>(base) + slot * row_size(hd, t);
}

// ---- Q8_0 keys and values (attend.h: "Q8_0 rows") ----

// sum_{i < 32} a[i] * b[i]: an exact integer (|a|, |b| <= 127).
inline int32_t dot_block_q8(const int8_t* a, const int8_t* b) {
#if FASA_AVX2
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
  const __m256i ay = _mm256_sign_epi8(y, y);  // |b|, unsigned
  const __m256i sx = _mm256_sign_epi8(x, y);  // a * sign(b)
#if FASA_AVX512
  const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ay, sx);
#else
  const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ay, sx), _mm256_set1_epi16(1));
#endif
  __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
  h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(h);
#else
  int32_t s = 0;
  for (int i = 0; i < kQ8Block; ++i) s += int32_t{a[i]} * b[i];
  return s;
#endif
}

// The integer Q.K of a quantized query row and a key row, nb blocks: attend.h's sequence.
inline float dot_q8(const uint8_t* q, const uint8_t* k, int nb) {
  float acc = 0.0f;
  for (int b = 0; b < nb; ++b) {
    const int32_t isum = dot_block_q8(q8_0_block_qs(q, b), q8_0_block_qs(k, b));
    const float dd = half_to_float(q8_0_block_d(q, b)) * half_to_float(q8_0_block_d(k, b));
    acc = std::fma(dd, static_cast<float>(isum), acc);
  }
  return acc;
}

// The queries quantized as Q8_0 rows (attend.h), in the caller's frame. [n_q, row bytes]
const uint8_t* quantize_queries(ScratchFrame& f, const float* const* qs, int n_q, int hd) {
  const size_t rb = q8_0_row_bytes(hd);
  uint8_t* buf = f.take<uint8_t>(n_q * rb);
  for (int i = 0; i < n_q; ++i) quantize_row_q8_0(qs[i], hd, buf + i * rb);
  return buf;
}

// Fixed-order dot product: lane l (of 16) accumulates dims l, l + 16, ... with fused
// multiply-adds, then the lanes are added in a tree: for s = 8, 4, 2, 1: a[l] += a[l + s].
inline float tree16(float* a) {
  for (int s = 8; s >= 1; s /= 2) {
    for (int l = 0; l < s; ++l) a[l] = a[l] + a[l + s];
  }
  return a[0];
}

#if FASA_AVX2 && !FASA_AVX512
// Elements [i, i + 8) of a row as fp32.
inline __m256 load8(const uint8_t* row, int i, KvType t) {
  return t == KvType::F16
             ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)))
             : _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
}
#endif

float dot_row(const float* q, const uint8_t* row, int hd, KvType t) {
#if FASA_AVX512
  if (hd % 16 == 0) {
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < hd; i += 16) {
      const __m512 k =
          t == KvType::F16
              ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i)))
              : _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
      acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), k, acc);
    }
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc);
    return tree16(lanes);
  }
#elif FASA_AVX2
  if (hd % 16 == 0) {  // lanes 0-7 and 8-15 in two registers
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int i = 0; i < hd; i += 16) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(row, i, t), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load8(row, i + 8, t), a1);
    }
    alignas(32) float lanes[16];
    _mm256_store_ps(lanes, a0);
    _mm256_store_ps(lanes + 8, a1);
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

#if FASA_AVX512
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

// Scores of cnt keys (rows kp[j]) against q: 16 at a time where the head allows, each key
// exactly dot_row's sequence either way. e: [cnt]
void tile_scores(const float* q, const uint8_t* const* kp, int cnt, int hd, KvType t, float* e) {
  int j = 0;
#if FASA_AVX512
  if (hd % 16 == 0) {
    for (; j + 16 <= cnt; j += 16) dot_rows16(q, kp + j, hd, t, e + j);
  }
#endif
  for (; j < cnt; ++j) e[j] = dot_row(q, kp[j], hd, t);
}

// tile_scores for Q8_0 keys against a quantized query row qq.
void tile_scores_q8(const uint8_t* qq, const uint8_t* const* kp, int cnt, int hd, float* e) {
  const int nb = hd / kQ8Block;
  for (int j = 0; j < cnt; ++j) e[j] = dot_q8(qq, kp[j], nb);
}

// sum of e[0, cnt): 16 float lanes (lane = j mod 16, in order of j), then tree16.
float tile_sum(const float* e, int cnt) {
  alignas(64) float lanes[16] = {};
  int j = 0;
#if FASA_AVX512
  __m512 acc = _mm512_setzero_ps();
  for (; j + 16 <= cnt; j += 16) acc = _mm512_add_ps(acc, _mm512_loadu_ps(e + j));
  _mm512_store_ps(lanes, acc);
#elif FASA_AVX2
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  for (; j + 16 <= cnt; j += 16) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(e + j));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(e + j + 8));
  }
  _mm256_store_ps(lanes, a0);
  _mm256_store_ps(lanes + 8, a1);
#endif
  for (; j < cnt; ++j) lanes[j % 16] += e[j];
  return tree16(lanes);
}

// For every query i that sees key j (counts[i] > j): acc_i = fma(e_ij, V_j, acc_i), acc_i at
// states + i * ss. e_col: e_ij at e_col[i * kAttnTile].
void accumulate_row(const uint8_t* row, int hd, KvType t, const float* e_col, const int* counts,
                    int j, int n_q, float* states, int ss) {
#if FASA_AVX512
  if (hd % 16 == 0) {
    for (int d = 0; d < hd; d += 16) {
      const __m512 v =
          t == KvType::F16
              ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * d)))
              : _mm512_loadu_ps(reinterpret_cast<const float*>(row) + d);
      for (int i = 0; i < n_q; ++i) {
        if (counts[i] <= j) continue;
        float* acc = states + i * ss + d;
        _mm512_storeu_ps(acc, _mm512_fmadd_ps(_mm512_set1_ps(e_col[i * kAttnTile]), v,
                                              _mm512_loadu_ps(acc)));
      }
    }
    return;
  }
#elif FASA_AVX2
  if (hd % 8 == 0) {
    for (int d = 0; d < hd; d += 8) {
      const __m256 v = load8(row, d, t);
      for (int i = 0; i < n_q; ++i) {
        if (counts[i] <= j) continue;
        float* acc = states + i * ss + d;
        _mm256_storeu_ps(acc, _mm256_fmadd_ps(_mm256_set1_ps(e_col[i * kAttnTile]), v,
                                              _mm256_loadu_ps(acc)));
      }
    }
    return;
  }
#endif
  for (int i = 0; i < n_q; ++i) {
    if (counts[i] <= j) continue;
    const float p = e_col[i * kAttnTile];
    float* acc = states + i * ss;
    if (t == KvType::F16) {
      const auto* r = reinterpret_cast<const uint16_t*>(row);
      for (int d = 0; d < hd; ++d) acc[d] = std::fma(p, fp16_to_fp32(r[d]), acc[d]);
    } else {
      const auto* r = reinterpret_cast<const float*>(row);
      for (int d = 0; d < hd; ++d) acc[d] = std::fma(p, r[d], acc[d]);
    }
  }
}

#if FASA_AVX512
// Sixteen row elements [d, d + 16) as fp32 (f16 -> f32 is exact).
template <bool kF16>
inline __m512 load16(const uint8_t* row, int d) {
  if constexpr (kF16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * d)));
  } else {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + d);
  }
}

// One query's acc[d0, d0 + 16 NZ) += e[j] V_j[d0, ...) for j < cnt, held in registers across the
// keys. Per element the same fused multiply-adds in key order as accumulate_row, so the same bits.
template <int NZ, bool kF16>
void accumulate_block(const uint8_t* const* vrows, int d0, const float* e, int cnt, float* acc) {
  __m512 a[NZ];
  for (int z = 0; z < NZ; ++z) a[z] = _mm512_loadu_ps(acc + d0 + 16 * z);
  for (int j = 0; j < cnt; ++j) {
    const __m512 p = _mm512_set1_ps(e[j]);
    for (int z = 0; z < NZ; ++z)
      a[z] = _mm512_fmadd_ps(p, load16<kF16>(vrows[j], d0 + 16 * z), a[z]);
  }
  for (int z = 0; z < NZ; ++z) _mm512_storeu_ps(acc + d0 + 16 * z, a[z]);
}

// accumulate_block over a whole head (hd % 16 == 0): blocks of 8, 4 and 1 vectors.
template <bool kF16>
void accumulate_query(const uint8_t* const* vrows, int hd, const float* e, int cnt, float* acc) {
  int d0 = 0;
  for (; d0 + 128 <= hd; d0 += 128) accumulate_block<8, kF16>(vrows, d0, e, cnt, acc);
  for (; d0 + 64 <= hd; d0 += 64) accumulate_block<4, kF16>(vrows, d0, e, cnt, acc);
  for (; d0 < hd; d0 += 16) accumulate_block<1, kF16>(vrows, d0, e, cnt, acc);
}

// cnt f16 rows as fp32 rows [cnt, hd] in out; ptrs[j] = row j of out.
void rows_to_f32(const uint8_t* const* rows, int cnt, int hd, float* out, const uint8_t** ptrs) {
  for (int j = 0; j < cnt; ++j) {
    float* o = out + static_cast<size_t>(j) * hd;
    for (int d = 0; d < hd; d += 16) _mm512_storeu_ps(o + d, load16<true>(rows[j], d));
    ptrs[j] = reinterpret_cast<const uint8_t*>(o);
  }
}
#endif

// accumulate_row for a Q8_0 V row: acc_i = fma(e_ij, d_b * q, acc_i) per value.
void accumulate_row_q8(const uint8_t* row, int hd, const float* e_col, const int* counts, int j,
                       int n_q, float* states, int ss) {
  for (int b = 0; b < hd / kQ8Block; ++b) {
    const float dv = half_to_float(q8_0_block_d(row, b));
    const int8_t* qs = q8_0_block_qs(row, b);
    const int d0 = b * kQ8Block;
#if FASA_AVX512
    const __m512 dvv = _mm512_set1_ps(dv);
    for (int h = 0; h < kQ8Block; h += 16) {
      const __m512 v = _mm512_mul_ps(dvv, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                                              reinterpret_cast<const __m128i*>(qs + h)))));
      for (int i = 0; i < n_q; ++i) {
        if (counts[i] <= j) continue;
        float* acc = states + i * ss + d0 + h;
        _mm512_storeu_ps(acc, _mm512_fmadd_ps(_mm512_set1_ps(e_col[i * kAttnTile]), v,
                                              _mm512_loadu_ps(acc)));
      }
    }
#elif FASA_AVX2
    const __m256 dvv = _mm256_set1_ps(dv);
    for (int h = 0; h < kQ8Block; h += 8) {
      const __m256 v = _mm256_mul_ps(dvv, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(
                                              reinterpret_cast<const __m128i*>(qs + h)))));
      for (int i = 0; i < n_q; ++i) {
        if (counts[i] <= j) continue;
        float* acc = states + i * ss + d0 + h;
        _mm256_storeu_ps(acc, _mm256_fmadd_ps(_mm256_set1_ps(e_col[i * kAttnTile]), v,
                                              _mm256_loadu_ps(acc)));
      }
    }
#else
    for (int i = 0; i < n_q; ++i) {
      if (counts[i] <= j) continue;
      const float p = e_col[i * kAttnTile];
      float* acc = states + i * ss + d0;
      for (int d = 0; d < kQ8Block; ++d)
        acc[d] = std::fma(p, dv * static_cast<float>(qs[d]), acc[d]);
    }
#endif
  }
}

// ---- attend_partial's steps, one tile of keys at a time ----

// Keys of tile [t0, t1) each query sees (counts: [n_q]); returns the most any query sees.
[[gnu::always_inline]] inline int tile_counts(const int* n_keys, int n_q, int t0, int t1,
                                              int* counts) {
  int n_tile = 0;
  for (int i = 0; i < n_q; ++i) {
    counts[i] = std::max(0, std::min(n_keys[i], t1) - t0);
    n_tile = std::max(n_tile, counts[i]);
  }
  return n_tile;
}

// The K and V rows of the tile's keys t0 + j, j < n_tile. kp, vp: [n_tile]
[[gnu::always_inline]] inline void tile_rows(const KvRows& rows, const int32_t* slots, int t0,
                                             int n_tile, const uint8_t** kp, const uint8_t** vp) {
  const int hd = rows.head_dim;
  for (int j = 0; j < n_tile; ++j) {
    const int64_t s = slots ? slots[t0 + j] : t0 + j;
    kp[j] = row_ptr(rows.k, s, hd, rows.type);
    vp[j] = row_ptr(rows.v, s, hd, rows.type);
  }
}

// One query's online-softmax step over its scores e [cnt]: scale them, the new running max,
// e = exp(s - max), the tile's sum into the state st [hd + 2]; acc rescaled to the new max.
[[gnu::always_inline]] inline void softmax_update(float* e, int cnt, float scale, float* st,
                                                  int hd) {
  float mt = -INFINITY;
  for (int j = 0; j < cnt; ++j) {
    e[j] *= scale;
    mt = e[j] > mt ? e[j] : mt;
  }
  const float m = st[hd];
  const float mn = m > mt ? m : mt;
  const float corr = m == -INFINITY ? 0.0f : softmax_exp(m - mn);
  softmax_exp_shifted(e, mn, cnt, e);
  st[hd] = mn;
  st[hd + 1] = std::fma(st[hd + 1], corr, tile_sum(e, cnt));
  if (corr != 1.0f) {
    for (int d = 0; d < hd; ++d) st[d] *= corr;
  }
}

// acc_i += e_ij V_j, key by key (each V row converted once for every query). ebuf:
// [n_q, kAttnTile], counts: [n_q], states: [n_q, ss].
[[gnu::always_inline]] inline void accumulate_tile_rows(const uint8_t* const* vp, int n_tile,
                                                        int hd, KvType t, const float* ebuf,
                                                        const int* counts, int n_q, float* states,
                                                        int ss) {
  for (int j = 0; j < n_tile; ++j) {
    if (t == KvType::Q8_0) {
      accumulate_row_q8(vp[j], hd, ebuf + j, counts, j, n_q, states, ss);
    } else {
      accumulate_row(vp[j], hd, t, ebuf + j, counts, j, n_q, states, ss);
    }
  }
}

#if FASA_AVX512
// Several queries read each row of the tile: its n_tile f16 K and V rows as fp32 (exact) in
// kvbuf [2, kAttnTile, hd]; kp, vp then point there.
[[gnu::always_inline]] inline void widen_tile(const uint8_t** kp, const uint8_t** vp, int n_tile,
                                              int hd, float* kvbuf) {
  rows_to_f32(kp, n_tile, hd, kvbuf, kp);
  rows_to_f32(vp, n_tile, hd, kvbuf + static_cast<size_t>(kAttnTile) * hd, vp);
}

// acc_i += e_ij V_j, query by query with acc_i in registers (the same bits as
// accumulate_tile_rows). V rows of type t (F16 or F32).
[[gnu::always_inline]] inline void accumulate_tile_fast(const uint8_t* const* vp, int hd, KvType t,
                                                        const float* ebuf, const int* counts,
                                                        int n_q, float* states, int ss) {
  for (int i = 0; i < n_q; ++i) {
    if (counts[i] == 0) continue;
    const float* e = ebuf + i * kAttnTile;
    if (t == KvType::F16) {
      accumulate_query<true>(vp, hd, e, counts[i], states + i * ss);
    } else {
      accumulate_query<false>(vp, hd, e, counts[i], states + i * ss);
    }
  }
}
#endif

#if FASA_AVX512
#pragma GCC diagnostic pop
#endif

}  // namespace

void qk_scores(const float* q, const KvRows& rows, const int32_t* slots, int n, float* scores) {
  if (rows.type == KvType::Q8_0) {
    ScratchFrame f;
    const uint8_t* qq = quantize_queries(f, &q, 1, rows.head_dim);
    const int nb = rows.head_dim / kQ8Block;
    for (int j = 0; j < n; ++j) {
      scores[j] = dot_q8(qq, row_ptr(rows.k, slots ? slots[j] : j, rows.head_dim, rows.type), nb);
    }
    return;
  }
  int j0 = 0;
#if FASA_AVX512
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

void attn_state_clear(float* state, int head_dim) {
  for (int d = 0; d < head_dim; ++d) state[d] = 0.0f;
  state[head_dim] = -INFINITY;
  state[head_dim + 1] = 0.0f;
}

void attend_partial(const float* const* qs, int n_q, const int* n_keys, const KvRows& rows,
                    const int32_t* slots, int begin, int end, float scale, float* states) {
  const int hd = rows.head_dim, ss = attn_state_size(hd);
  for (int i = 0; i < n_q; ++i) attn_state_clear(states + i * ss, hd);
  ScratchFrame f;
  float* ebuf = f.take<float>(static_cast<size_t>(n_q) * kAttnTile);  // [n_q, kAttnTile] exp(s - m)
  int* counts = f.take<int>(n_q);  // [n_q] keys of the tile each query sees
  const uint8_t* kp[kAttnTile];
  const uint8_t* vp[kAttnTile];
  const bool q8 = rows.type == KvType::Q8_0;
  const size_t qrb = q8 ? q8_0_row_bytes(hd) : 0;
#if FASA_AVX512
  const bool fast = !q8 && hd % 16 == 0;  // register-held accumulators (same bits)
  // [2, kAttnTile, hd] a tile's K then V rows as fp32 (several f16 queries)
  float* kvbuf = fast && rows.type == KvType::F16 && n_q > 1
                     ? f.take<float>(2u * kAttnTile * static_cast<size_t>(hd))
                     : nullptr;
#endif
  const uint8_t* qq = q8 ? quantize_queries(f, qs, n_q, hd) : nullptr;  // [n_q, qrb]
  for (int t0 = begin; t0 < end; t0 += kAttnTile) {
    const int n_tile = tile_counts(n_keys, n_q, t0, std::min(t0 + kAttnTile, end), counts);
    if (n_tile == 0) break;  // n_keys below t0 for every query: so for every later tile too
    tile_rows(rows, slots, t0, n_tile, kp, vp);
    KvType kt = rows.type;  // the type kp / vp point at now
#if FASA_AVX512
    if (fast && kt == KvType::F16 && n_q > 1) {
      widen_tile(kp, vp, n_tile, hd, kvbuf);
      kt = KvType::F32;
    }
#endif
    for (int i = 0; i < n_q; ++i) {  // scores, then the online-softmax step
      const int cnt = counts[i];
      if (cnt == 0) continue;
      float* e = ebuf + i * kAttnTile;
      if (q8) {
        tile_scores_q8(qq + i * qrb, kp, cnt, hd, e);
      } else {
        tile_scores(qs[i], kp, cnt, hd, kt, e);
      }
      softmax_update(e, cnt, scale, states + i * ss, hd);
    }
#if FASA_AVX512
    if (fast) {
      accumulate_tile_fast(vp, hd, kt, ebuf, counts, n_q, states, ss);
      continue;
    }
#endif
    accumulate_tile_rows(vp, n_tile, hd, rows.type, ebuf, counts, n_q, states, ss);
  }
}

void attn_state_merge(float* into, const float* from, int head_dim) {
  const int hd = head_dim;
  const float mb = from[hd];
  if (mb == -INFINITY) return;  // from is empty
  const float ma = into[hd];
  if (ma == -INFINITY) {
    for (int d = 0; d < hd + 2; ++d) into[d] = from[d];
    return;
  }
  const float mn = ma > mb ? ma : mb;
  const float ca = softmax_exp(ma - mn), cb = softmax_exp(mb - mn);
  for (int d = 0; d < hd; ++d) into[d] = std::fma(into[d], ca, from[d] * cb);
  into[hd] = mn;
  into[hd + 1] = std::fma(into[hd + 1], ca, from[hd + 1] * cb);
}

void attn_state_finish(const float* state, int head_dim, float* out) {
  const float l = state[head_dim + 1];
  for (int d = 0; d < head_dim; ++d) out[d] = l > 0.0f ? state[d] / l : 0.0f;
}

void attend_one(const float* q, const KvRows& rows, const int32_t* slots, int n, float scale,
                float* out) {
  const int hd = rows.head_dim, ss = attn_state_size(hd);
  ScratchFrame f;
  float* total = f.take<float>(ss);  // [state] the running result
  float* part = f.take<float>(ss);   // [state] one chunk's part
  attn_state_clear(total, hd);
  for (int c0 = 0; c0 < n; c0 += kAttnChunk) {
    FASA_ISA_NS::attend_partial(&q, 1, &n, rows, slots, c0, std::min(n, c0 + kAttnChunk), scale,
                                part);
    attn_state_merge(total, part, hd);
  }
  attn_state_finish(total, hd, out);
}

void attend_probs(const float* q, const KvRows& rows, const int32_t* slots, int n, float scale,
                  float* probs) {
  FASA_ISA_NS::qk_scores(q, rows, slots, n, probs);
  for (int j = 0; j < n; ++j) probs[j] *= scale;
  softmax_inplace(probs, n);
}

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
