// Integer K-quant matmul over q8_K activations (see matmul_q8k.h for the exact numerics).
//
// Structure: workers own contiguous groups of kRows output rows. A group's blocks are first
// unpacked, once whatever n_tok, into a per-worker scratch of UnpackedBlock (codes u in element
// order, the 16 group scales and coefficients as int16, d and dmin); a register micro-kernel
// then computes R rows x T tokens from it, each block's weights loaded once per row for all T
// tokens. Only the block's 16 integer lanes are computed differently per set, and they are the
// same integers: AVX-512 VNNI maddubs + dpwssd over 64 elements (one zmm of 16 lanes), AVX2
// maddubs + madd over 32 (lanes 0-7 or 8-15), or plain loops. maddubs (u8 x s8 pairs to
// saturating i16) cannot saturate: codes are at most 63, so a pair is at most 2 * 63 * 128.
#include "fasa/kernels/matmul_q8k.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/core/parallel.h"

#include "fasa/core/isa_intrin.h"
#include "fasa/dispatch/isa_api.h"

#include "fasa/core/isa_begin.h"

namespace fasa::FASA_ISA_NS {

namespace {

constexpr int kRows = 4;
constexpr int kToks = 4;
constexpr int64_t kMinParallelMacs = 1 << 16;

#include "fasa/kernels/q8k_unpack.inc.h"

// ---- portable ---------------------------------------------------------------------------------

inline float hsum16_portable(float* a) {  // a: [16], clobbered
  for (int s = 8; s >= 1; s /= 2) {
    for (int l = 0; l < s; ++l) a[l] = a[l] + a[l + s];
  }
  return a[0];
}

// y[t * ldy + r] for r < nr, t < nt; wk: [nb, kRows] unpacked blocks.
void kernel_portable(bool with_min, const UnpackedBlock* wk, int nr, const Q8KActs& a,
                     int64_t tok0, int nt, float* y, int64_t ldy) {
  const int64_t nb = a.n_in / 256;
  for (int t = 0; t < nt; ++t) {
    const int64_t tok = tok0 + t;
    for (int r = 0; r < nr; ++r) {
      float acc[16] = {};
      for (int64_t b = 0; b < nb; ++b) {
        const UnpackedBlock& k = wk[b * kRows + r];
        const int8_t* q = a.q.data() + tok * a.n_in + b * 256;
        const int32_t* bsum = a.bsum.data() + (tok * nb + b) * 16;
        const float* dbsum = a.dbsum.data() + (tok * nb + b) * 16;
        int32_t isum[16] = {};
        for (int c = 0; c < 4; ++c) {  // elements 64 c .. 64 c + 63
          for (int l = 0; l < 16; ++l) {
            const int e = 64 * c + 4 * l;
            int32_t dot = 0;
            for (int i = 0; i < 4; ++i) dot += static_cast<int32_t>(k.u[e + i]) * q[e + i];
            isum[l] += k.s[e / 16] * dot;
          }
        }
        const float dd = k.d * a.d[tok * nb + b];
        if (with_min) {
          for (int l = 0; l < 16; ++l) {
            acc[l] = std::fma(dd, static_cast<float>(isum[l]), acc[l]);
            acc[l] = std::fma(k.dmin_c[l], dbsum[l], acc[l]);
          }
        } else {
          for (int l = 0; l < 16; ++l) {
            acc[l] = std::fma(dd, static_cast<float>(isum[l] + k.c[l] * bsum[l]), acc[l]);
          }
        }
      }
      y[t * ldy + r] = hsum16_portable(acc);
    }
  }
}

// ---- AVX2 and AVX-512 VNNI ---------------------------------------------------------------------
// The 16 lanes are one zmm (AVX-512), or two ymm: lo (lanes 0-7) and hi (8-15) (AVX2). The
// kernel loads a block's weights once per row and reuses them for every token of the tile.

#if FASA_AVX2
// hsum16's tree once the 16 lanes are down to 8 (v = lanes 0-7 + lanes 8-15).
inline float hsum8_simd(__m256 v) {
  __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

#if FASA_AVX512
using VecF = __m512;
using VecI = __m512i;

inline VecF zero_f() { return _mm512_setzero_ps(); }
inline VecF bcast(float v) { return _mm512_set1_ps(v); }
inline VecF mul(VecF a, VecF b) { return _mm512_mul_ps(a, b); }
inline VecF fma_i(VecF d, VecI v, VecF acc) {  // acc + d * float(v), one rounding
  return _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(v), acc);
}
inline VecI zero_i() { return _mm512_setzero_si512(); }
inline VecI load_i32(const int32_t* p) { return _mm512_loadu_si512(p); }  // p: [16]
inline VecF load_f(const float* p) { return _mm512_loadu_ps(p); }            // p: [16]
inline VecF fma_f(VecF a, VecF b, VecF acc) { return _mm512_fmadd_ps(a, b, acc); }
// 16 int16 -> 16 int32 lanes, zero-extended.
inline VecI widen_u16(const int16_t* p) { return _mm512_cvtepu16_epi32(load256(p)); }
// Per lane: low16(a) * low16(b) + high16(a) * high16(b); with b zero-extended, a * b exactly.
inline VecI mul_lo16(VecI a, VecI b) { return _mm512_madd_epi16(a, b); }
inline float hsum16(VecF v) {
  return hsum8_simd(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

// A block's weights in registers: codes and scales (int16 lane i of chunk c: the scale of
// elements 64 c + 2 i, 2 i + 1, which is group 4 c + i / 8).
struct BlockRegs {
  __m512i u[4], s[4];
};

inline BlockRegs load_block(const UnpackedBlock& k) {
  BlockRegs r;
  const __m512i s16 = _mm512_castsi256_si512(load256(k.s));
  for (int c = 0; c < 4; ++c) {
    r.u[c] = _mm512_load_si512(k.u + 64 * c);
    alignas(64) int16_t idx[32];
    for (int i = 0; i < 32; ++i) idx[i] = static_cast<int16_t>(4 * c + i / 8);
    r.s[c] = _mm512_permutexvar_epi16(_mm512_load_si512(idx), s16);
  }
  return r;
}

// z + the 16 lanes of isum (chunk c of 64 elements: lane l takes elements 64 c + 4 l ..).
inline VecI block_lanes(VecI z, const BlockRegs& w, const int8_t* q) {
  for (int c = 0; c < 4; ++c) {
    const __m512i p = _mm512_maddubs_epi16(w.u[c], _mm512_loadu_si512(q + 64 * c));
    z = _mm512_dpwssd_epi32(z, p, w.s[c]);
  }
  return z;
}
#else
// Two ymm halves: lo holds lanes 0-7, hi lanes 8-15.
struct VecF {
  __m256 lo, hi;
};
struct VecI {
  __m256i lo, hi;
};

inline VecF zero_f() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline VecF bcast(float v) { return {_mm256_set1_ps(v), _mm256_set1_ps(v)}; }
inline VecF mul(VecF a, VecF b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
inline VecF fma_i(VecF d, VecI v, VecF acc) {
  return {_mm256_fmadd_ps(d.lo, _mm256_cvtepi32_ps(v.lo), acc.lo),
          _mm256_fmadd_ps(d.hi, _mm256_cvtepi32_ps(v.hi), acc.hi)};
}
inline VecI zero_i() { return {_mm256_setzero_si256(), _mm256_setzero_si256()}; }
inline VecI load_i32(const int32_t* p) { return {load256(p), load256(p + 8)}; }  // p: [16]
inline VecF load_f(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline VecF fma_f(VecF a, VecF b, VecF acc) {
  return {_mm256_fmadd_ps(a.lo, b.lo, acc.lo), _mm256_fmadd_ps(a.hi, b.hi, acc.hi)};
}
inline VecI widen_u16(const int16_t* p) {
  return {_mm256_cvtepu16_epi32(load128(p)), _mm256_cvtepu16_epi32(load128(p + 8))};
}
inline VecI mul_lo16(VecI a, VecI b) {
  return {_mm256_madd_epi16(a.lo, b.lo), _mm256_madd_epi16(a.hi, b.hi)};
}
inline float hsum16(VecF v) { return hsum8_simd(_mm256_add_ps(v.lo, v.hi)); }

// Codes in the scratch; scales per ymm chunk i (elements 32 i ..): int16 lane j takes group
// 2 i + j / 8.
struct BlockRegs {
  const uint8_t* u;
  __m256i s[8];
};

inline BlockRegs load_block(const UnpackedBlock& k) {
  BlockRegs r;
  r.u = k.u;
  const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                        2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  for (int i = 0; i < 8; ++i) {
    int32_t pair;
    std::memcpy(&pair, k.s + 2 * i, 4);
    r.s[i] = _mm256_shuffle_epi8(_mm256_set1_epi32(pair), pick);
  }
  return r;
}

// Chunk i of 32 elements holds lanes 8 (i % 2) .. 8 (i % 2) + 7.
inline VecI block_lanes(VecI z, const BlockRegs& w, const int8_t* q) {
  for (int i = 0; i < 8; ++i) {
    const __m256i p = _mm256_maddubs_epi16(load256(w.u + 32 * i), load256(q + 32 * i));
    __m256i& half = i % 2 == 0 ? z.lo : z.hi;
    half = _mm256_add_epi32(half, _mm256_madd_epi16(p, w.s[i]));
  }
  return z;
}
#endif  // FASA_AVX512

template <bool kMin, int R, int NT>
void kernel_simd(const UnpackedBlock* wk, const Q8KActs& a, int64_t tok0, float* y, int64_t ldy) {
  const int64_t nb = a.n_in / 256;
  VecF acc[R][NT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = zero_f();
  }
  for (int64_t b = 0; b < nb; ++b) {
    // Unrolled, so that acc stays in registers (GCC does not unroll this body by itself).
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const UnpackedBlock& k = wk[b * kRows + r];
      const BlockRegs w = load_block(k);
      const VecF d = bcast(k.d);
      // Min types: dmin * c; offset types: c, zero-extended so that mul_lo16 gives bsum * c.
      const VecF dmin_c = kMin ? load_f(k.dmin_c) : zero_f();
      const VecI c = kMin ? zero_i() : widen_u16(k.c);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const int64_t i = (tok0 + t) * nb + b;
        const int8_t* q = a.q.data() + (tok0 + t) * a.n_in + b * 256;
        const VecF dd = mul(d, bcast(a.d[i]));
        if constexpr (kMin) {
          acc[r][t] = fma_i(dd, block_lanes(zero_i(), w, q), acc[r][t]);
          acc[r][t] = fma_f(dmin_c, load_f(a.dbsum.data() + i * 16), acc[r][t]);
        } else {
          const VecI g = mul_lo16(load_i32(a.bsum.data() + i * 16), c);
          acc[r][t] = fma_i(dd, block_lanes(g, w, q), acc[r][t]);
        }
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < R; ++r) y[t * ldy + r] = hsum16(acc[r][t]);
  }
}

template <bool kMin, int R>
void kernel_simd_toks(int nt, const UnpackedBlock* wk, const Q8KActs& a, int64_t tok0, float* y,
                      int64_t ldy) {
  switch (nt) {
    case 1: kernel_simd<kMin, R, 1>(wk, a, tok0, y, ldy); return;
    case 2: kernel_simd<kMin, R, 2>(wk, a, tok0, y, ldy); return;
    case 3: kernel_simd<kMin, R, 3>(wk, a, tok0, y, ldy); return;
    default: kernel_simd<kMin, R, kToks>(wk, a, tok0, y, ldy); return;
  }
}

template <bool kMin>
void kernel_simd_any(const UnpackedBlock* wk, int nr, const Q8KActs& a, int64_t tok0, int nt,
                     float* y, int64_t ldy) {
  switch (nr) {
    case 1: kernel_simd_toks<kMin, 1>(nt, wk, a, tok0, y, ldy); return;
    case 2: kernel_simd_toks<kMin, 2>(nt, wk, a, tok0, y, ldy); return;
    case 3: kernel_simd_toks<kMin, 3>(nt, wk, a, tok0, y, ldy); return;
    default: kernel_simd_toks<kMin, kRows>(nt, wk, a, tok0, y, ldy); return;
  }
}
#endif  // FASA_AVX2

// ---- driver -----------------------------------------------------------------------------------

template <bool kSimd>
void run(DType t, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a, float* y) {
  if (n_out <= 0 || a.n_tok <= 0) return;
  FASA_DCHECK(block_bytes(t) > 0 && n_in % 256 == 0 && a.n_in == n_in);
  const int bb = block_bytes(t);
  const int64_t nb = n_in / 256;
  const int64_t row_bytes = nb * bb;
  const bool with_min = has_min(t);
  const auto* wb = static_cast<const uint8_t*>(w);
  const int64_t n_groups = (n_out + kRows - 1) / kRows;
  auto work = [&](int64_t g0, int64_t g1, int) {
    thread_local std::vector<UnpackedBlock> scratch;  // [nb, kRows]
    if (scratch.size() < static_cast<size_t>(nb * kRows)) scratch.resize(nb * kRows);
    const int64_t o_end = std::min(g1 * kRows, n_out);
    for (int64_t o = g0 * kRows; o < o_end; o += kRows) {
      const int nr = static_cast<int>(std::min<int64_t>(kRows, o_end - o));
      // Prefetch the rows two groups ahead: at one token the loads would otherwise stall.
      if (o + 3 * kRows <= o_end) {
        const uint8_t* next = wb + (o + 2 * kRows) * row_bytes;
        for (int64_t off = 0; off < kRows * row_bytes; off += 64) {
          __builtin_prefetch(next + off, 0, 2);
        }
      }
      for (int r = 0; r < nr; ++r) {
        for (int64_t b = 0; b < nb; ++b) {
          unpack_block<kSimd>(t, wb + (o + r) * row_bytes + b * bb, scratch[b * kRows + r]);
        }
      }
      for (int64_t tok = 0; tok < a.n_tok; tok += kToks) {
        const int nt = static_cast<int>(std::min<int64_t>(kToks, a.n_tok - tok));
        float* yo = y + tok * n_out + o;
#if FASA_AVX2
        if constexpr (kSimd) {
          if (with_min) {
            kernel_simd_any<true>(scratch.data(), nr, a, tok, nt, yo, n_out);
          } else {
            kernel_simd_any<false>(scratch.data(), nr, a, tok, nt, yo, n_out);
          }
          continue;
        }
#endif
        kernel_portable(with_min, scratch.data(), nr, a, tok, nt, yo, n_out);
      }
    }
  };
  if (n_out * n_in * a.n_tok < kMinParallelMacs) {
    work(0, n_groups, 0);
  } else {
    parallel_ranges(n_groups, work);
  }
}

}  // namespace

bool has_q8k_path(DType t) { return block_bytes(t) > 0; }

namespace detail {
void matmul_q8k_portable(DType type, const void* w, int64_t n_out, int64_t n_in,
                         const Q8KActs& a, float* y) {
  run<false>(type, w, n_out, n_in, a, y);
}
}  // namespace detail

void matmul_q8k(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a,
                float* y) {
  run<FASA_AVX2 != 0>(type, w, n_out, n_in, a, y);
}

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
