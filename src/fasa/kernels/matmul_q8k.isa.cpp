// Integer K-quant matmul over q8_K activations (see matmul_q8k.h for the exact numerics).
//
// Structure: workers own contiguous groups of kRows output rows (or a repacked matrix's 16-row
// groups). A group's blocks are first unpacked, once whatever n_tok, into a per-worker scratch of
// UnpackedBlock (codes u in element order, the 16 group scales and coefficients as int16, d and
// dmin); a register micro-kernel then computes R rows x T tokens from it, each block's weights
// loaded once per row for all T tokens. Each set reaches the block integers I_b and M_b its own
// way, and they are exact, so every set gives the same integers and then the same fp32 steps:
// AVX-512 VNNI and AVX2 sum 16 integer lanes (maddubs + dpwssd / madd) and reduce them across the
// tile; the repacked 16-row kernels (AVX-512) sum u q per group with dpbusd for 16 rows at once
// and scale by s_g with vpmulld; the portable path loops. maddubs (u8 x s8 pairs to saturating
// i16) cannot saturate: codes are at most 63, so a pair is at most 2 * 63 * 128.
#include "fasa/kernels/matmul_q8k.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/core/parallel.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/repack.h"

#include "fasa/core/isa_intrin.h"
#include "fasa/kernels/isa_api.h"

#include "fasa/core/isa_begin.h"

namespace fasa::FASA_ISA_NS {

namespace {

constexpr int kRows = 4;
constexpr int kToks = 4;
constexpr int64_t kMinParallelMacs = 1 << 16;
// Q4_K / Q6_K with at most this many tokens read the blocks straight from the rows (AVX-512).
constexpr int64_t kDirectMaxToks = 3;
// Repacked matrices take the 16-row kernels (AVX-512) in tiles of up to this many tokens.
constexpr int kR16Toks = 4;

#include "fasa/kernels/simd_common.inc.h"
// (after simd_common: it uses half_at)
#include "fasa/kernels/q8k_unpack.inc.h"

// ---- portable ---------------------------------------------------------------------------------

// y[t * ldy + r] for r < nr, t < nt; wk: [nb, kRows] unpacked blocks.
void kernel_portable(bool with_min, const UnpackedBlock* wk, int nr, const Q8KActs& a, int64_t tok0,
                     int nt, float* y, int64_t ldy) {
  const int64_t nb = a.n_in / 256;
  for (int t = 0; t < nt; ++t) {
    const int64_t tok = tok0 + t;
    for (int r = 0; r < nr; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const UnpackedBlock& k = wk[b * kRows + r];
        const int8_t* q = a.q.data() + tok * a.n_in + b * 256;
        const int32_t* bsum = a.bsum.data() + (tok * nb + b) * 16;
        int32_t isum = 0, msum = 0;  // I_b and M_b of matmul_q8k.h
        for (int g = 0; g < 16; ++g) {
          int32_t dot = 0;
          for (int i = 0; i < 16; ++i) dot += static_cast<int32_t>(k.u[16 * g + i]) * q[16 * g + i];
          isum += k.s[g] * dot;
          (with_min ? msum : isum) += k.c[g] * bsum[g];
        }
        float f = k.d * static_cast<float>(isum);
        if (with_min) f = std::fma(k.dmin, static_cast<float>(msum), f);
        acc = std::fma(f, a.d[tok * nb + b], acc);
      }
      y[t * ldy + r] = acc;
    }
  }
}

// ---- AVX2 and AVX-512 VNNI ---------------------------------------------------------------------
// A block's products for one row and token are 16 int32 lanes (one zmm, or two ymm: lo holds
// lanes 0-7, hi 8-15) whose sum is I_b (M_b: the lanes c_g bsum_g). The lanes of the R x T tile
// are then summed across (exact integers) into one int32 per (row, token), and the fp32 steps of
// matmul_q8k.h run per output.

#if FASA_AVX2
#if FASA_AVX512
using VecI = __m512i;

inline VecI zero_i() { return _mm512_setzero_si512(); }
inline VecI load_i32(const int32_t* p) { return _mm512_loadu_si512(p); }  // p: [16]
// 16 int16 -> 16 int32 lanes, zero-extended.
inline VecI widen_u16(const int16_t* p) { return _mm512_cvtepu16_epi32(load256(p)); }
// Per lane: low16(a) * low16(b) + high16(a) * high16(b); with b zero-extended, a * b exactly.
inline VecI mul_lo16(VecI a, VecI b) { return _mm512_madd_epi16(a, b); }

// Row sums of a tile: per 128-bit lane L, [v[0]'s lane-L total, v[1]'s, v[2]'s, v[3]'s].
using RowSums = __m512i;
[[gnu::always_inline]] inline RowSums row_sums(const VecI (&v)[4]) {
  const __m512i a =
      _mm512_add_epi32(_mm512_unpacklo_epi32(v[0], v[1]), _mm512_unpackhi_epi32(v[0], v[1]));
  const __m512i b =
      _mm512_add_epi32(_mm512_unpacklo_epi32(v[2], v[3]), _mm512_unpackhi_epi32(v[2], v[3]));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
}
inline RowSums zero_sums() { return _mm512_setzero_si512(); }
// By 128-bit lanes: [x0 + x1, x2 + x3, y0 + y1, y2 + y3].
inline __m512i pair_sums(__m512i x, __m512i y) {
  return _mm512_add_epi32(_mm512_shuffle_i32x4(x, y, 0x88), _mm512_shuffle_i32x4(x, y, 0xdd));
}
// A 4 x 4 tile of outputs, lane 4 r + t for row r and token t.
using TileI = __m512i;
using TileF = __m512;
// Lane 4 r + t: the total of row r's vector t (p[r] = row_sums of row r).
[[gnu::always_inline]] inline TileI tile_sums(const RowSums (&p)[4]) {
  return pair_sums(pair_sums(p[0], p[1]), pair_sums(p[2], p[3]));
}
inline TileF tile_zero() { return _mm512_setzero_ps(); }
inline TileF tile_rows(const float* v) {  // lane 4 r + t = v[r]; v: [4]
  const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_loadu_ps(v)));
}
inline TileF tile_toks(const float* v) { return _mm512_broadcast_f32x4(_mm_loadu_ps(v)); }
inline TileF tile_mul_i(TileF a, TileI i) { return _mm512_mul_ps(a, _mm512_cvtepi32_ps(i)); }
inline TileF tile_fma_i(TileF a, TileI i, TileF c) {  // c + a * float(i), one rounding
  return _mm512_fmadd_ps(a, _mm512_cvtepi32_ps(i), c);
}
inline TileF tile_fma(TileF a, TileF b, TileF c) { return _mm512_fmadd_ps(a, b, c); }
inline void tile_store(TileF v, float* out) { _mm512_storeu_ps(out, v); }  // out: [16]

// A block's weights in registers: codes and scales (int16 lane i of chunk c: the scale of
// elements 64 c + 2 i, 2 i + 1, which is group 4 c + i / 8).
struct BlockRegs {
  __m512i u[4], s[4];
};

// The group of each int16 lane of chunk c: lane i (elements 64 c + 2 i, + 1) is group
// 4 c + i / 8. A constant table, so the hot loops load it rather than build it on the stack.
struct GroupIndex {
  alignas(64) int16_t v[4][32];
};
constexpr GroupIndex make_group_index() {
  GroupIndex g{};
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 32; ++i) g.v[c][i] = static_cast<int16_t>(4 * c + i / 8);
  }
  return g;
}
inline constexpr GroupIndex kGroupIndex = make_group_index();

// s16: the 16 group scales as int16 in the low half; returns chunk c's per-lane scales.
inline __m512i group_scales(__m512i s16, int c) {
  return _mm512_permutexvar_epi16(_mm512_load_si512(kGroupIndex.v[c]), s16);
}

[[gnu::always_inline]] inline BlockRegs load_block(const UnpackedBlock& k) {
  BlockRegs r;
  const __m512i s16 = _mm512_castsi256_si512(load256(k.s));
  for (int c = 0; c < 4; ++c) {
    r.u[c] = _mm512_load_si512(k.u + 64 * c);
    r.s[c] = group_scales(s16, c);
  }
  return r;
}

// z + the 16 lanes of s u q (chunk c of 64 elements: lane l takes elements 64 c + 4 l ..).
[[gnu::always_inline]] inline VecI block_lanes(VecI z, const BlockRegs& w, const int8_t* q) {
  for (int c = 0; c < 4; ++c) {
    const __m512i p = _mm512_maddubs_epi16(w.u[c], _mm512_loadu_si512(q + 64 * c));
    z = _mm512_dpwssd_epi32(z, p, w.s[c]);
  }
  return z;
}
#else
// Two ymm halves: lo holds lanes 0-7, hi lanes 8-15.
struct VecI {
  __m256i lo, hi;
};

inline VecI zero_i() { return {_mm256_setzero_si256(), _mm256_setzero_si256()}; }
inline VecI load_i32(const int32_t* p) { return {load256(p), load256(p + 8)}; }  // p: [16]
inline VecI widen_u16(const int16_t* p) {
  return {_mm256_cvtepu16_epi32(load128(p)), _mm256_cvtepu16_epi32(load128(p + 8))};
}
inline VecI mul_lo16(VecI a, VecI b) {
  return {_mm256_madd_epi16(a.lo, b.lo), _mm256_madd_epi16(a.hi, b.hi)};
}

// Row sums: per 128-bit lane L, [v[0]'s lane-L total, v[1]'s, v[2]'s, v[3]'s] (lo + hi first).
using RowSums = __m256i;
[[gnu::always_inline]] inline RowSums row_sums(const VecI (&v)[4]) {
  __m256i h[4];
  for (int i = 0; i < 4; ++i) h[i] = _mm256_add_epi32(v[i].lo, v[i].hi);
  const __m256i a =
      _mm256_add_epi32(_mm256_unpacklo_epi32(h[0], h[1]), _mm256_unpackhi_epi32(h[0], h[1]));
  const __m256i b =
      _mm256_add_epi32(_mm256_unpacklo_epi32(h[2], h[3]), _mm256_unpackhi_epi32(h[2], h[3]));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
}
inline RowSums zero_sums() { return _mm256_setzero_si256(); }
// A 4 x 4 tile of outputs, lane 4 r + t for row r and token t: a holds rows 0-1, b rows 2-3.
struct TileI {
  __m256i a, b;
};
struct TileF {
  __m256 a, b;
};
inline __m256i halves_sum(__m256i x, __m256i y) {  // [x.lo + x.hi, y.lo + y.hi] by 128 bits
  return _mm256_add_epi32(_mm256_permute2x128_si256(x, y, 0x20),
                          _mm256_permute2x128_si256(x, y, 0x31));
}
// Lane 4 r + t: the total of row r's vector t.
[[gnu::always_inline]] inline TileI tile_sums(const RowSums (&p)[4]) {
  return {halves_sum(p[0], p[1]), halves_sum(p[2], p[3])};
}
inline TileF tile_zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline TileF tile_rows(const float* v) {  // lane 4 r + t = v[r]; v: [4]
  return {_mm256_setr_m128(_mm_set1_ps(v[0]), _mm_set1_ps(v[1])),
          _mm256_setr_m128(_mm_set1_ps(v[2]), _mm_set1_ps(v[3]))};
}
inline TileF tile_toks(const float* v) {
  const __m128 x = _mm_loadu_ps(v);
  const __m256 b = _mm256_setr_m128(x, x);
  return {b, b};
}
inline TileF tile_mul_i(TileF a, TileI i) {
  return {_mm256_mul_ps(a.a, _mm256_cvtepi32_ps(i.a)), _mm256_mul_ps(a.b, _mm256_cvtepi32_ps(i.b))};
}
inline TileF tile_fma_i(TileF a, TileI i, TileF c) {
  return {_mm256_fmadd_ps(a.a, _mm256_cvtepi32_ps(i.a), c.a),
          _mm256_fmadd_ps(a.b, _mm256_cvtepi32_ps(i.b), c.b)};
}
inline TileF tile_fma(TileF a, TileF b, TileF c) {
  return {_mm256_fmadd_ps(a.a, b.a, c.a), _mm256_fmadd_ps(a.b, b.b, c.b)};
}
inline void tile_store(TileF v, float* out) {  // out: [16]
  _mm256_storeu_ps(out, v.a);
  _mm256_storeu_ps(out + 8, v.b);
}

// Codes in the scratch; scales per ymm chunk i (elements 32 i ..): int16 lane j takes group
// 2 i + j / 8.
struct BlockRegs {
  const uint8_t* u;
  __m256i s[8];
};

[[gnu::always_inline]] inline BlockRegs load_block(const UnpackedBlock& k) {
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
[[gnu::always_inline]] inline VecI block_lanes(VecI z, const BlockRegs& w, const int8_t* q) {
  for (int i = 0; i < 8; ++i) {
    const __m256i p = _mm256_maddubs_epi16(load256(w.u + 32 * i), load256(q + 32 * i));
    __m256i& half = i % 2 == 0 ? z.lo : z.hi;
    half = _mm256_add_epi32(half, _mm256_madd_epi16(p, w.s[i]));
  }
  return z;
}
#endif  // FASA_AVX512

// A block's registers and constants, however they were made: from an UnpackedBlock in the
// scratch (every set) or straight from the GGUF block bytes (AVX-512, Q4_K and Q6_K).
struct LoadedBlock {
  BlockRegs w;
  float d, dmin;
  VecI c;  // c per lane, zero-extended int16 (mul_lo16 gives bsum * c)
};

// Blocks from the per-worker scratch: wk[b * kRows + r].
struct UnpackedSource {
  const UnpackedBlock* wk;
  [[gnu::always_inline]] LoadedBlock load(int64_t b, int r) const {
    const UnpackedBlock& k = wk[b * kRows + r];
    return {load_block(k), k.d, k.dmin, widen_u16(k.c)};
  }
};

#if FASA_AVX512
// Blocks straight from the weight rows (no scratch): row r of the group starts at
// rows + r * row_bytes. The same integers and floats as unpack_block + load_block.
// Q4_K chunk c (elements 64 c ..) is qs[32 c .. 32 c + 31]: its low nibbles are the first 32
// elements, its high nibbles the next 32: one ymm broadcast to both halves, shifted by 0 / 4.
struct Q4KSource {
  const uint8_t* rows;
  int64_t row_bytes;
  [[gnu::always_inline]] LoadedBlock load(int64_t b, int r) const {
    const uint8_t* blk = rows + r * row_bytes + b * 144;
    LoadedBlock k;
    const __m512i shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    const __m512i m4 = _mm512_set1_epi8(15);
    for (int c = 0; c < 4; ++c) {
      const __m512i q = _mm512_broadcast_i64x4(load256(blk + 16 + 32 * c));
      k.w.u[c] = _mm512_and_si512(_mm512_srlv_epi16(q, shift), m4);
    }
    // Sub-block scales and mins (scales_q45_k), as int16: chunk c's int16 lane i (elements
    // 64 c + 2 i, + 1) is sub-block 2 c + i / 16.
    const uint32_t w0 = u32_at(blk + 4), w1 = u32_at(blk + 8), w2 = u32_at(blk + 12);
    constexpr uint32_t m6 = 0x3f3f3f3f, m4s = 0x0f0f0f0f, m2 = 0x03030303;
    const uint64_t sc = (w0 & m6) | uint64_t{(w2 & m4s) | (((w0 >> 6) & m2) << 4)} << 32;
    const uint64_t mn = (w1 & m6) | uint64_t{((w2 >> 4) & m4s) | (((w1 >> 6) & m2) << 4)} << 32;
    const __m512i s16 =
        _mm512_castsi128_si512(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sc))));
    for (int c = 0; c < 4; ++c) {
      const __m512i idx = _mm512_set1_epi16(static_cast<int16_t>(2 * c));
      const __m512i half = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(1), 1);
      k.w.s[c] = _mm512_permutexvar_epi16(_mm512_add_epi16(idx, half), s16);
    }
    k.d = half_at(blk);
    k.dmin = half_at(blk + 2);
    const __m128i mv = _mm_cvtsi64_si128(static_cast<int64_t>(mn));
    const __m512i c32 =  // lane g: -(min of sub-block g / 2), as zero-extended int16
        _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(mv, mv)));
    k.c = _mm512_and_si512(c32, _mm512_set1_epi32(0xffff));
    return k;
  }
};

// Q6_K half h = chunks 2 h, 2 h + 1: the low nibbles of ql[64 h .. 64 h + 63] are chunk 2 h in
// order, the high nibbles chunk 2 h + 1; bits 4, 5 come from qh[32 h + l], two bits per 32
// elements (bits 0-1, 2-3 for chunk 2 h; 4-5, 6-7 for 2 h + 1).
struct Q6KSource {
  const uint8_t* rows;
  int64_t row_bytes;
  [[gnu::always_inline]] LoadedBlock load(int64_t b, int r) const {
    const uint8_t* blk = rows + r * row_bytes + b * 210;
    LoadedBlock k;
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(3);
    const __m512i one = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(blk + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(load256(blk + 128 + 32 * h));
      const __m512i lo[2] = {_mm512_and_si512(ql, m4),
                             _mm512_and_si512(_mm512_srli_epi16(ql, 4), m4)};
      for (int e = 0; e < 2; ++e) {
        const __m512i sh = _mm512_add_epi16(_mm512_set1_epi16(static_cast<int16_t>(4 * e)), one);
        const __m512i hi = _mm512_and_si512(_mm512_srlv_epi16(qh, sh), m2);
        k.w.u[2 * h + e] = _mm512_or_si512(lo[e], _mm512_slli_epi16(hi, 4));
      }
    }
    // Group scales (int8), as int16: chunk c's int16 lane i is group 4 c + i / 8.
    const __m256i s16 = _mm256_cvtepi8_epi16(load128(blk + 192));
    const __m512i sz = _mm512_castsi256_si512(s16);
    for (int c = 0; c < 4; ++c) k.w.s[c] = group_scales(sz, c);
    k.d = half_at(blk + 208);
    k.dmin = 0.0f;
    k.c =
        _mm512_cvtepu16_epi32(_mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(s16, 5)));
    return k;
  }
};
#endif  // FASA_AVX512

// R rows x NT tokens (R, NT <= 4): y[t * ldy + r].
template <bool kMin, int R, int NT, typename Source>
void kernel_simd(const Source& src, const Q8KActs& a, int64_t tok0, float* y, int64_t ldy) {
  const int64_t nb = a.n_in / 256;
  TileF acc = tile_zero();  // lane 4 r + t
  for (int64_t b = 0; b < nb; ++b) {
    RowSums si[4] = {zero_sums(), zero_sums(), zero_sums(), zero_sums()};  // I_b lanes per row
    RowSums sm[4] = {zero_sums(), zero_sums(), zero_sums(), zero_sums()};  // M_b lanes
    alignas(16) float d[4] = {}, dmin[4] = {}, dq[4] = {};                 // per row, row, token
    // Unrolled, so that the lanes stay in registers (GCC does not unroll this body by itself).
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const LoadedBlock k = src.load(b, r);
      d[r] = k.d;
      dmin[r] = k.dmin;
      VecI zi[4] = {zero_i(), zero_i(), zero_i(), zero_i()};
      VecI zm[4] = {zero_i(), zero_i(), zero_i(), zero_i()};
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const int64_t i = (tok0 + t) * nb + b;
        const int8_t* q = a.q.data() + (tok0 + t) * a.n_in + b * 256;
        const VecI cb = mul_lo16(load_i32(a.bsum.data() + i * 16), k.c);
        if constexpr (kMin) {
          zi[t] = block_lanes(zero_i(), k.w, q);
          zm[t] = cb;
        } else {
          zi[t] = block_lanes(cb, k.w, q);
        }
      }
      si[r] = row_sums(zi);
      if constexpr (kMin) sm[r] = row_sums(zm);
    }
    for (int t = 0; t < NT; ++t) dq[t] = a.d[(tok0 + t) * nb + b];
    // matmul_q8k.h's fp32 steps, every (row, token) of the tile at once.
    TileF f = tile_mul_i(tile_rows(d), tile_sums(si));
    if constexpr (kMin) f = tile_fma_i(tile_rows(dmin), tile_sums(sm), f);
    acc = tile_fma(f, tile_toks(dq), acc);
  }
  alignas(64) float out[16];  // [4 r + t]
  tile_store(acc, out);
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < R; ++r) y[t * ldy + r] = out[4 * r + t];
  }
}

template <bool kMin, int R, typename Source>
void kernel_simd_toks(int nt, const Source& src, const Q8KActs& a, int64_t tok0, float* y,
                      int64_t ldy) {
  switch (nt) {
    case 1: kernel_simd<kMin, R, 1>(src, a, tok0, y, ldy); return;
    case 2: kernel_simd<kMin, R, 2>(src, a, tok0, y, ldy); return;
    case 3: kernel_simd<kMin, R, 3>(src, a, tok0, y, ldy); return;
    default: kernel_simd<kMin, R, kToks>(src, a, tok0, y, ldy); return;
  }
}

template <bool kMin, typename Source>
void kernel_simd_any(const Source& src, int nr, const Q8KActs& a, int64_t tok0, int nt, float* y,
                     int64_t ldy) {
  switch (nr) {
    case 1: kernel_simd_toks<kMin, 1>(nt, src, a, tok0, y, ldy); return;
    case 2: kernel_simd_toks<kMin, 2>(nt, src, a, tok0, y, ldy); return;
    case 3: kernel_simd_toks<kMin, 3>(nt, src, a, tok0, y, ldy); return;
    default: kernel_simd_toks<kMin, kRows>(nt, src, a, tok0, y, ldy); return;
  }
}
#endif  // FASA_AVX2

// ---- repacked 16-row groups (AVX-512) ---------------------------------------------------------
// One zmm lane per row of the group (repack.h): dpbusd multiplies 4 codes of each of the 16 rows
// by 4 activation bytes, so a group's sum of u q (its 16 or 32 elements) takes one instruction
// per 4 elements for all 16 rows; vpmulld by the group scale s_g adds it to I_b. Exact integers,
// then matmul_q8k.h's fp32 steps with one lane per row.

#if FASA_AVX512
// The group's bytes kR16Ahead blocks on (into L2), one line at a time: at one token the
// hardware prefetcher alone leaves the loads waiting (8B-shape decode, 2 threads: 2.9 t/s
// without, 3.4-3.9 with; 3 and 6 blocks ahead alike:
// docs/notebook/speed/data/repacked_kquants/quick_checks.txt).
constexpr int kR16Ahead = 3;
inline void prefetch_group_block(const uint8_t* g, int64_t gb) {
  for (int64_t o = 0; o < gb; o += 64)
    _mm_prefetch(reinterpret_cast<const char*>(g + kR16Ahead * gb + o), _MM_HINT_T1);
}

// 16 bytes (one per row) as int32 lanes.
inline __m512i rows_u8(const uint8_t* p) { return _mm512_cvtepu8_epi32(load128(p)); }
inline __m512i rows_i8(const uint8_t* p) { return _mm512_cvtepi8_epi32(load128(p)); }

// Q4_K_R16, tokens tok0 .. tok0 + T - 1: g is the group's first block; y[t * ldy + r]. Chunk c
// (elements 64 c ..) is sub-block 2 c in the low nibbles of its 8 lane pairs and 2 c + 1 in the
// high nibbles; each code vector serves all T tokens.
template <int T>
void kernel_q4k_r16(const uint8_t* g, int64_t nb, const Q8KActs& a, int64_t tok0, float* y,
                    int64_t ldy) {
  constexpr int64_t gb = 16 * 148;
  __m512 acc[T];  // [token], 16 rows
  for (auto& v : acc) v = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(15);
  for (int64_t b = 0; b < nb; ++b, g += gb) {
    prefetch_group_block(g, gb);
    const int8_t* q[T];
    __m512i isum[T];  // I_b per row
    for (int t = 0; t < T; ++t) {
      q[t] = a.q.data() + (tok0 + t) * a.n_in + b * 256;
      isum[t] = _mm512_setzero_si512();
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m512i slo[T], shi[T];  // sum of u q over sub-blocks 2 c, 2 c + 1
      for (int t = 0; t < T; ++t) slo[t] = shi[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int lp = 0; lp < 8; ++lp) {
        const __m512i v = _mm512_loadu_si512(g + (lp * 4 + c) * 64);
        const __m512i ulo = _mm512_and_si512(v, m4);
        const __m512i uhi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          slo[t] = _mm512_dpbusd_epi32(slo[t], ulo, bcast4(q[t] + 64 * c + 4 * lp));
          shi[t] = _mm512_dpbusd_epi32(shi[t], uhi, bcast4(q[t] + 64 * c + 32 + 4 * lp));
        }
      }
      const __m512i s_lo = rows_u8(g + 2048 + 16 * (2 * c));
      const __m512i s_hi = rows_u8(g + 2048 + 16 * (2 * c + 1));
      for (int t = 0; t < T; ++t) {
        isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(slo[t], s_lo),
                                                             _mm512_mullo_epi32(shi[t], s_hi)));
      }
    }
    // M_b = -sum_j m_j (sum of q over sub-block j): dpwssd over the sub-block pairs (2 p, 2 p + 1)
    // against the tokens' bsum_pairs. float(M_b) = -float(P), so fma(dmin, float(M_b), f) is
    // fnmadd(dmin, float(P), f).
    __m512i mp[4];
    for (int p = 0; p < 4; ++p) {
      mp[p] = _mm512_or_si512(rows_u8(g + 2176 + 16 * (2 * p)),
                              _mm512_slli_epi32(rows_u8(g + 2176 + 16 * (2 * p + 1)), 16));
    }
    const __m512 d = _mm512_cvtph_ps(load256(g + 2304));
    const __m512 dmin = _mm512_cvtph_ps(load256(g + 2336));
    for (int t = 0; t < T; ++t) {
      const int64_t i = (tok0 + t) * nb + b;
      const int32_t* bp = a.bsum_pairs.data() + i * 4;
      __m512i m = _mm512_setzero_si512();
      for (int p = 0; p < 4; ++p) m = _mm512_dpwssd_epi32(m, mp[p], _mm512_set1_epi32(bp[p]));
      __m512 f = _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[t]));
      f = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(m), f);
      acc[t] = _mm512_fmadd_ps(f, _mm512_set1_ps(a.d[i]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// Q6_K_R16 codes: low 4 bits from ql's nibble kE, bits 4-5 from qh's bits 2 kK, 2 kK + 1.
template <int kE, int kK>
inline __m512i q6_codes(__m512i ql, __m512i qh) {
  const __m512i low =
      _mm512_and_si512(kE == 0 ? ql : _mm512_srli_epi16(ql, 4), _mm512_set1_epi8(15));
  __m512i h = qh;  // bits 2 kK, 2 kK + 1 to bits 4, 5
  if constexpr (2 * kK < 4) h = _mm512_slli_epi16(qh, 4 - 2 * kK);
  if constexpr (2 * kK > 4) h = _mm512_srli_epi16(qh, 2 * kK - 4);
  return _mm512_ternarylogic_epi32(h, _mm512_set1_epi8(0x30), low, 0xea);  // (h & m) | low
}

// Group kG (16 elements: lanes 4 (kG % 4) .. + 3 of chunk kG / 4) of a Q6_K_R16 block: for each
// token, s[t] = sum of (u - 32) q over the group (started at -32 bsum), then isum += s_g s[t].
template <int T, int kG>
inline void q6_group(const uint8_t* g, const int8_t* const (&q)[T], const int32_t* const (&bs)[T],
                     __m512i (&isum)[T]) {
  constexpr int c = kG / 4, h = c / 2, e = c % 2;
  __m512i s[T];
  for (int t = 0; t < T; ++t) s[t] = _mm512_set1_epi32(-32 * bs[t][kG]);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const int l = 4 * (kG % 4) + i;
    const __m512i ql = _mm512_loadu_si512(g + (h * 16 + l) * 64);
    const __m512i qh = _mm512_loadu_si512(g + 2048 + (h * 8 + l % 8) * 64);
    // bits 2 k of qh with k = 2 e + l / 8; l / 8 is kG % 4 / 2 for every i
    const __m512i u = q6_codes<e, 2 * e + kG % 4 / 2>(ql, qh);
    for (int t = 0; t < T; ++t) s[t] = _mm512_dpbusd_epi32(s[t], u, bcast4(q[t] + 64 * c + 4 * l));
  }
  const __m512i sc = rows_i8(g + 3072 + 16 * kG);
  for (int t = 0; t < T; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s[t], sc));
}

template <int T, int... kG>
inline void q6_groups(const uint8_t* g, const int8_t* const (&q)[T], const int32_t* const (&bs)[T],
                      __m512i (&isum)[T], std::integer_sequence<int, kG...>) {
  (q6_group<T, kG>(g, q, bs, isum), ...);
}

template <int T>
void kernel_q6k_r16(const uint8_t* g, int64_t nb, const Q8KActs& a, int64_t tok0, float* y,
                    int64_t ldy) {
  constexpr int64_t gb = 16 * 210;
  __m512 acc[T];  // [token], 16 rows
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b, g += gb) {
    prefetch_group_block(g, gb);
    const int8_t* q[T];
    const int32_t* bs[T];
    __m512i isum[T];  // I_b per row
    for (int t = 0; t < T; ++t) {
      const int64_t i = (tok0 + t) * nb + b;
      q[t] = a.q.data() + (tok0 + t) * a.n_in + b * 256;
      bs[t] = a.bsum.data() + i * 16;
      isum[t] = _mm512_setzero_si512();
    }
    q6_groups<T>(g, q, bs, isum, std::make_integer_sequence<int, 16>{});
    const __m512 d = _mm512_cvtph_ps(load256(g + 3328));
    for (int t = 0; t < T; ++t) {
      const __m512 f = _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[t]));
      acc[t] = _mm512_fmadd_ps(f, _mm512_set1_ps(a.d[(tok0 + t) * nb + b]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// Tokens in tiles of up to kR16Toks: each tile one pass over the group (from cache after the
// first).
template <int T>
void kernel_r16(DType t, const uint8_t* g, int64_t nb, const Q8KActs& a, int64_t tok0, float* y,
                int64_t ldy) {
  if (t == DType::Q4_K_R16) {
    kernel_q4k_r16<T>(g, nb, a, tok0, y, ldy);
  } else {
    kernel_q6k_r16<T>(g, nb, a, tok0, y, ldy);
  }
}
void kernel_r16_any(DType t, const uint8_t* g, int64_t nb, const Q8KActs& a, int64_t tok0, int nt,
                    float* y, int64_t ldy) {
  switch (nt) {
    case 1: kernel_r16<1>(t, g, nb, a, tok0, y, ldy); return;
    case 2: kernel_r16<2>(t, g, nb, a, tok0, y, ldy); return;
    case 3: kernel_r16<3>(t, g, nb, a, tok0, y, ldy); return;
    default: kernel_r16<kR16Toks>(t, g, nb, a, tok0, y, ldy); return;
  }
}
#endif  // FASA_AVX512

// ---- driver -----------------------------------------------------------------------------------
// run's steps, one group of output rows [o, o + nr) at a time; y0 = y + o: [n_tok, ldy].

#if FASA_AVX512
// A repacked 16-row group g (its rows back to back), every token, in tiles of kR16Toks.
[[gnu::always_inline]] inline void r16_group(DType t, const uint8_t* g, int64_t nb,
                                             const Q8KActs& a, float* y0, int64_t ldy) {
  for (int64_t tok = 0; tok < a.n_tok; tok += kR16Toks) {
    const int nt = static_cast<int>(std::min<int64_t>(kR16Toks, a.n_tok - tok));
    kernel_r16_any(t, g, nb, a, tok, nt, y0 + tok * ldy, ldy);
  }
}

// Few tokens: the blocks straight from the rows (unpacking to the scratch would cost as much
// as the products); many: unpacked once, reused by every token tile.
[[gnu::always_inline]] inline bool reads_direct(DType t, int64_t n_tok) {
  return n_tok <= kDirectMaxToks && (t == DType::Q4_K || t == DType::Q6_K);
}

// nr rows (Q4_K or Q6_K) from rows, row_bytes apart, straight from the blocks, every token.
[[gnu::always_inline]] inline void direct_group(DType t, const uint8_t* rows, int64_t row_bytes,
                                                int nr, const Q8KActs& a, float* y0, int64_t ldy) {
  for (int64_t tok = 0; tok < a.n_tok; tok += kToks) {
    const int nt = static_cast<int>(std::min<int64_t>(kToks, a.n_tok - tok));
    float* yo = y0 + tok * ldy;
    if (t == DType::Q4_K) {
      kernel_simd_any<true>(Q4KSource{rows, row_bytes}, nr, a, tok, nt, yo, ldy);
    } else {
      kernel_simd_any<false>(Q6KSource{rows, row_bytes}, nr, a, tok, nt, yo, ldy);
    }
  }
}
#endif

// Prefetch the rows two groups ahead of group o: at one token the loads would otherwise stall.
[[gnu::always_inline]] inline void prefetch_ahead(const uint8_t* wb, int64_t o, int64_t o_end,
                                                  int64_t row_bytes) {
  if (o + 3 * kRows <= o_end) {
    const uint8_t* next = wb + (o + 2 * kRows) * row_bytes;
    for (int64_t off = 0; off < kRows * row_bytes; off += 64) __builtin_prefetch(next + off, 0, 2);
  }
}

// Rows [o, o + nr) unpacked into the scratch: scratch[b * kRows + r], [nb, kRows].
template <bool kSimd>
[[gnu::always_inline]] inline void unpack_group(DType t, const uint8_t* wb, int64_t row_bytes,
                                                int64_t o, int nr, int64_t nb,
                                                UnpackedBlock* scratch) {
  uint8_t tmp[256];  // a repacked row's block, rebuilt
  for (int r = 0; r < nr; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      unpack_block<kSimd>(t, gguf_block(t, wb, row_bytes, o + r, b, tmp), scratch[b * kRows + r]);
    }
  }
}

// The unpacked group's nr rows for every token, in tiles of kToks.
template <bool kSimd>
[[gnu::always_inline]] inline void unpacked_group(bool with_min, const UnpackedBlock* scratch,
                                                  int nr, const Q8KActs& a, float* y0,
                                                  int64_t ldy) {
  for (int64_t tok = 0; tok < a.n_tok; tok += kToks) {
    const int nt = static_cast<int>(std::min<int64_t>(kToks, a.n_tok - tok));
    float* yo = y0 + tok * ldy;
#if FASA_AVX2
    if constexpr (kSimd) {
      if (with_min) {
        kernel_simd_any<true>(UnpackedSource{scratch}, nr, a, tok, nt, yo, ldy);
      } else {
        kernel_simd_any<false>(UnpackedSource{scratch}, nr, a, tok, nt, yo, ldy);
      }
      continue;
    }
#endif
    kernel_portable(with_min, scratch, nr, a, tok, nt, yo, ldy);
  }
}

template <bool kSimd>
void run(DType t, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a, float* y) {
  if (n_out <= 0 || a.n_tok <= 0) return;
  FASA_DCHECK(block_bytes(t) > 0 && n_in % 256 == 0 && a.n_in == n_in);
  const int64_t nb = n_in / 256;
  const int64_t row_bytes = nb * block_bytes(t);
  const bool with_min = has_min(t);
  const auto* wb = static_cast<const uint8_t*>(w);  // [n_out, row_bytes]
  // Work is split in groups of rows: kRows, or a repacked layout's 16-row groups.
  const bool r16 = is_repacked(t);
  const int64_t group_rows = r16 ? kRepackRows : kRows;
  FASA_DCHECK(!r16 || n_out % kRepackRows == 0);
  const int64_t n_groups = (n_out + group_rows - 1) / group_rows;
  auto work = [&](int64_t g0, int64_t g1, int) {
    ScratchFrame f;
    UnpackedBlock* scratch = f.take<UnpackedBlock>(nb * kRows);  // [nb, kRows]
    const int64_t o_end = std::min(g1 * group_rows, n_out);
#if FASA_AVX512
    if (kSimd && r16) {
      for (int64_t o = g0 * group_rows; o < o_end; o += kRepackRows) {
        r16_group(t, wb + o * row_bytes, nb, a, y + o, n_out);
      }
      return;
    }
#endif
    for (int64_t o = g0 * group_rows; o < o_end; o += kRows) {
      const int nr = static_cast<int>(std::min<int64_t>(kRows, o_end - o));
      prefetch_ahead(wb, o, o_end, row_bytes);
#if FASA_AVX512
      if (kSimd && reads_direct(t, a.n_tok)) {
        direct_group(t, wb + o * row_bytes, row_bytes, nr, a, y + o, n_out);
        continue;
      }
#endif
      unpack_group<kSimd>(t, wb, row_bytes, o, nr, nb, scratch);
      unpacked_group<kSimd>(with_min, scratch, nr, a, y + o, n_out);
    }
  };
  if (n_out * n_in * a.n_tok < kMinParallelMacs) {
    team_single([&] { work(0, n_groups, 0); });  // one worker, also in a team's collective code
  } else {
    parallel_ranges(n_groups, work);
  }
}

}  // namespace

bool has_q8k_path(DType t) { return block_bytes(t) > 0; }

namespace detail {
void matmul_q8k_portable(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a,
                         float* y) {
  run<false>(type, w, n_out, n_in, a, y);
}
}  // namespace detail

void matmul_q8k(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a,
                float* y) {
  run<FASA_AVX2 != 0>(type, w, n_out, n_in, a, y);
}

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
