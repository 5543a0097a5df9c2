// AMX int8 tile matmuls (numerics and tile roles: matmul_amx.h). avx512 set only; the other sets
// return false.
//
// Structure: workers own contiguous panels of 16 output rows. A panel's weights are unpacked
// once per call into a per-worker scratch in A-tile order (K-quants: hi and lo bytes, 16 rows x
// 256 per block; 32-blocks: int8 values, 16 rows x 32), reused for every token tile; the
// activations are rearranged once per call into B-tile (VNNI) order, 16 tokens per tile, zero
// padded. Per block the tiles give a 16 x 16 int32 product that is stored and finished in fp32
// with AVX-512 (one zmm = one weight row's 16 tokens), two token tiles per pass so that each
// A tile load serves both. Tiles are configured at the start of each worker's range and
// released at its end.
#include "fasa/kernels/matmul_amx.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/core/parallel.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/repack.h"

#include "fasa/core/isa_intrin.h"
#include "fasa/kernels/isa_api.h"

#include "fasa/core/isa_begin.h"

#if FASA_AVX512
#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8")
#endif

namespace fasa::FASA_ISA_NS {

namespace {

#include "fasa/kernels/simd_common.inc.h"
// (after simd_common: it uses half_at)
#include "fasa/kernels/q8k_unpack.inc.h"

constexpr int kTile = 16;  // rows per panel, tokens per tile

int q8_block_bytes(DType t) {  // per row (a repacked layout: that of its GGUF type)
  switch (gguf_type(t)) {
    case DType::Q4_0: return 18;
    case DType::Q4_1: return 20;
    case DType::Q5_0: return 22;
    case DType::Q5_1: return 24;
    case DType::Q8_0: return 34;
    default: return 0;
  }
}

#if FASA_AVX512

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Loads a tile configuration on construction, releases the tiles on destruction.
struct TileScope {
  explicit TileScope(const TileConfig& c) { _tile_loadconfig(&c); }
  ~TileScope() { _tile_release(); }
};

// tmm0-3: C (16 x 16 int32); tmm4, 5: A (16 rows x 64 B); tmm6, 7: B (16 x 64 B).
TileConfig config_q8k() {
  TileConfig c;
  for (int i = 0; i < 8; ++i) {
    c.colsb[i] = 64;
    c.rows[i] = 16;
  }
  return c;
}

// tmm0, 1: C; tmm2: A (16 rows x 32 B); tmm3, 4: B (8 x 64 B: 32 elements of 16 tokens).
TileConfig config_q8() {
  TileConfig c;
  c.colsb[0] = c.colsb[1] = 64;
  c.rows[0] = c.rows[1] = 16;
  c.colsb[2] = 32;
  c.rows[2] = 16;
  c.colsb[3] = c.colsb[4] = 64;
  c.rows[3] = c.rows[4] = 8;
  return c;
}

// Activations in B-tile order: q at [tile][n_in / 4][16 tokens][4], tokens past n_tok zero.
void to_vnni(const int8_t* q, int64_t n_tok, int64_t n_in, std::vector<int8_t>& out) {
  const int64_t n_tiles = (n_tok + kTile - 1) / kTile, n4 = n_in / 4;
  out.assign(static_cast<size_t>(n_tiles * n_in * kTile), 0);
  auto tile = [&](int64_t T) {
    auto* dst = reinterpret_cast<uint32_t*>(out.data()) + T * n4 * kTile;
    const int64_t nt = std::min<int64_t>(kTile, n_tok - T * kTile);
    for (int64_t j = 0; j < nt; ++j) {
      const int8_t* src = q + (T * kTile + j) * n_in;
      for (int64_t k = 0; k < n4; ++k) std::memcpy(dst + k * kTile + j, src + 4 * k, 4);
    }
  };
  if (n_tiles * n_in >= (1 << 16)) {
    parallel_for(n_tiles, tile);
  } else {
    for (int64_t T = 0; T < n_tiles; ++T) tile(T);
  }
}

// Per-token values [n_tok, nb] to [tile][nb][16], zero padded.
template <typename V>
void per_tile(const V* v, int64_t n_tok, int64_t nb, std::vector<V>& out) {
  const int64_t n_tiles = (n_tok + kTile - 1) / kTile;
  out.assign(static_cast<size_t>(n_tiles * nb * kTile), V{});
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t b = 0; b < nb; ++b)
      out[((t / kTile) * nb + b) * kTile + t % kTile] = v[t * nb + b];
  }
}

inline void store_panel(const float* acc, int nr, int64_t tok0, int64_t n_tok, float* y,
                        int64_t n_out) {  // acc: [16 rows, 16 tokens]
  const int64_t nt = std::min<int64_t>(kTile, n_tok - tok0);
  for (int64_t j = 0; j < nt; ++j) {
    for (int r = 0; r < nr; ++r) y[(tok0 + j) * n_out + r] = acc[r * kTile + j];
  }
}

// ---- K-quants ----------------------------------------------------------------------------------

struct alignas(64) PanelBlockK {  // one 256-block of a 16-row panel
  int8_t hi[kTile][256];
  uint8_t lo[kTile][256];
  float d[kTile], dmin[kTile];
  int32_t cpair[kTile][8];  // min types: pair p of coefficients as two int16 (min_pairs)
};

struct ActsK {
  std::vector<int8_t> q;     // [tile][n_in / 4][16][4]
  std::vector<float> d;      // [tile][nb][16]
  std::vector<int32_t> bsp;  // [tile][nb][8][16]: pair p of group sums as two int16 (min_pairs)
};

// Min types pair coefficients and activation sums for dpwssd: M = sum_p of the pair products.
// Q2_K (a min per 16 elements): pair p = groups 2p, 2p + 1 (8 pairs). Q4_K, Q5_K (a min per 32,
// shared by two groups): sums over 32 (|sum| <= 4096, still int16), pair p = sub-blocks 2p,
// 2p + 1 (4 pairs). Offset types: none.
int min_pairs(DType t) { return !has_min(t) ? 0 : t == DType::Q2_K ? 8 : 4; }

inline int32_t pack16(int a, int b) {
  return static_cast<int32_t>(static_cast<uint16_t>(a) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(b)) << 16));
}

void prepare_k(const Q8KActs& a, int pairs, ActsK& out) {
  const int64_t nb = a.n_in / 256, n_tiles = (a.n_tok + kTile - 1) / kTile;
  to_vnni(a.q.data(), a.n_tok, a.n_in, out.q);
  per_tile(a.d.data(), a.n_tok, nb, out.d);
  out.bsp.assign(static_cast<size_t>(n_tiles * nb * 8 * kTile), 0);
  for (int64_t t = 0; t < a.n_tok; ++t) {
    for (int64_t b = 0; b < nb; ++b) {
      const int32_t* bs = a.bsum.data() + (t * nb + b) * 16;
      int32_t* dst = out.bsp.data() + ((t / kTile) * nb + b) * 8 * kTile + t % kTile;
      if (pairs == 8) {  // |bsum| <= 16 * 128: fits int16
        for (int p = 0; p < 8; ++p) dst[p * kTile] = pack16(bs[2 * p], bs[2 * p + 1]);
      } else if (pairs == 4) {  // the sums over 32, packed by quantize_acts_q8k
        for (int p = 0; p < 4; ++p) dst[p * kTile] = a.bsum_pairs[(t * nb + b) * 4 + p];
      }
    }
  }
}

// Rows o .. o + nr - 1 (nr <= 16) into pk[0 .. nb); rows past nr are zero.
void unpack_panel_k(DType t, const uint8_t* w, int64_t row_bytes, int nr, int64_t nb,
                    PanelBlockK* pk) {
  const bool offset = !has_min(t);
  UnpackedBlock k;
  uint8_t tmp[256];  // a repacked row's block, rebuilt
  for (int64_t b = 0; b < nb; ++b) {
    PanelBlockK& p = pk[b];
    for (int r = 0; r < kTile; ++r) {
      if (r >= nr) {
        std::memset(p.hi[r], 0, 256);
        std::memset(p.lo[r], 0, 256);
        p.d[r] = p.dmin[r] = 0.0f;
        std::memset(p.cpair[r], 0, sizeof p.cpair[r]);
        continue;
      }
      unpack_block<true>(t, gguf_block(t, w, row_bytes, r, b, tmp), k);
      p.d[r] = k.d;
      p.dmin[r] = offset ? 0.0f : k.dmin;
      for (int g = 0; g < 16; ++g) {  // v = s u (+ c): |v| <= 4096, int16
        const __m256i u = _mm256_cvtepu8_epi16(load128(k.u + 16 * g));
        __m256i v = _mm256_mullo_epi16(u, _mm256_set1_epi16(k.s[g]));
        if (offset) v = _mm256_add_epi16(v, _mm256_set1_epi16(k.c[g]));
        const __m256i hi = _mm256_srai_epi16(v, 6);
        const __m256i lo = _mm256_and_si256(v, _mm256_set1_epi16(63));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p.hi[r] + 16 * g), _mm256_cvtepi16_epi8(hi));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p.lo[r] + 16 * g), _mm256_cvtepi16_epi8(lo));
      }
      const int pairs = min_pairs(t);
      for (int q = 0; q < 8; ++q) {
        p.cpair[r][q] = pairs == 8            ? pack16(k.c[2 * q], k.c[2 * q + 1])
                        : pairs == 4 && q < 4 ? pack16(k.c[4 * q], k.c[4 * q + 2])
                                              : 0;
      }
    }
  }
}

// acc[r][j] (row r, token j) += this block's terms; chi, clo: [16 rows, 16 tokens] int32.
template <int kPairs>
inline void finish_block_k(const int32_t* chi, const int32_t* clo, const PanelBlockK& p,
                           const float* dq, const int32_t* bsp, float* acc) {
  const __m512 vdq = _mm512_loadu_ps(dq);
  __m512i bs[8];
  if constexpr (kPairs > 0) {
    for (int q = 0; q < kPairs; ++q) bs[q] = _mm512_loadu_si512(bsp + q * kTile);
  }
  for (int r = 0; r < kTile; ++r) {
    const __m512i i = _mm512_add_epi32(_mm512_slli_epi32(_mm512_loadu_si512(chi + r * kTile), 6),
                                       _mm512_loadu_si512(clo + r * kTile));
    __m512 f = _mm512_mul_ps(_mm512_set1_ps(p.d[r]), _mm512_cvtepi32_ps(i));
    if constexpr (kPairs > 0) {
      __m512i m = _mm512_setzero_si512();
      for (int q = 0; q < kPairs; ++q)
        m = _mm512_dpwssd_epi32(m, bs[q], _mm512_set1_epi32(p.cpair[r][q]));
      f = _mm512_fmadd_ps(_mm512_set1_ps(p.dmin[r]), _mm512_cvtepi32_ps(m), f);
    }
    _mm512_storeu_ps(acc + r * kTile, _mm512_fmadd_ps(f, vdq, _mm512_loadu_ps(acc + r * kTile)));
  }
}

// NT (1 or 2) token tiles from T0 for one panel; acc: [NT][16 rows][16 tokens].
template <int kPairs, int NT>
void panel_tiles_k(const PanelBlockK* pk, int64_t nb, int64_t n_in, const ActsK& a, int64_t T0,
                   float* acc) {
  // Software pipeline: block b's tile products run while block b - 1 is finished in fp32
  // (tiles are stored into c[b % 2]); the fp32 order per output is unchanged (blocks in order).
  alignas(64) int32_t c[2][4][kTile * kTile];
  std::fill(acc, acc + NT * kTile * kTile, 0.0f);
  const int8_t* q0 = a.q.data() + T0 * n_in * kTile;
  const int8_t* q1 = q0 + n_in * kTile;
  auto finish = [&](int64_t b) {
    for (int t = 0; t < NT; ++t) {
      const int64_t i = (T0 + t) * nb + b;
      finish_block_k<kPairs>(c[b % 2][2 * t], c[b % 2][2 * t + 1], pk[b], a.d.data() + i * kTile,
                             a.bsp.data() + i * 8 * kTile, acc + t * kTile * kTile);
    }
  };
  for (int64_t b = 0; b < nb; ++b) {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (NT == 2) {
      _tile_zero(2);
      _tile_zero(3);
    }
    for (int ch = 0; ch < 4; ++ch) {
      const int64_t off = (b * 64 + 16 * ch) * 64;  // element b * 256 + 64 ch, in B order
      _tile_loadd(4, pk[b].hi[0] + 64 * ch, 256);
      _tile_loadd(5, pk[b].lo[0] + 64 * ch, 256);
      _tile_loadd(6, q0 + off, 64);
      _tile_dpbssd(0, 4, 6);
      _tile_dpbusd(1, 5, 6);
      if constexpr (NT == 2) {
        _tile_loadd(7, q1 + off, 64);
        _tile_dpbssd(2, 4, 7);
        _tile_dpbusd(3, 5, 7);
      }
    }
    if (b > 0) finish(b - 1);
    _tile_stored(0, c[b % 2][0], 64);
    _tile_stored(1, c[b % 2][1], 64);
    if constexpr (NT == 2) {
      _tile_stored(2, c[b % 2][2], 64);
      _tile_stored(3, c[b % 2][3], 64);
    }
  }
  finish(nb - 1);
}

template <int kPairs>
void tiles_k_nt(int nt, const PanelBlockK* pk, int64_t nb, int64_t n_in, const ActsK& a, int64_t T0,
                float* acc) {
  if (nt == 2) {
    panel_tiles_k<kPairs, 2>(pk, nb, n_in, a, T0, acc);
  } else {
    panel_tiles_k<kPairs, 1>(pk, nb, n_in, a, T0, acc);
  }
}

void tiles_k(int pairs, int nt, const PanelBlockK* pk, int64_t nb, int64_t n_in, const ActsK& a,
             int64_t T0, float* acc) {
  switch (pairs) {
    case 0: tiles_k_nt<0>(nt, pk, nb, n_in, a, T0, acc); return;
    case 4: tiles_k_nt<4>(nt, pk, nb, n_in, a, T0, acc); return;
    default: tiles_k_nt<8>(nt, pk, nb, n_in, a, T0, acc); return;
  }
}

void run_k(DType t, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a, float* y) {
  ActsK& acts = workspace_object<ActsK>();  // the caller's; workers reach it through `acts`
  prepare_k(a, min_pairs(t), acts);
  const int64_t nb = n_in / 256, row_bytes = nb * block_bytes(t);
  const int64_t n_panels = (n_out + kTile - 1) / kTile, n_tiles = (a.n_tok + kTile - 1) / kTile;
  const int pairs = min_pairs(t);
  const auto* wb = static_cast<const uint8_t*>(w);
  const TileConfig cfg = config_q8k();
  parallel_ranges(n_panels, [&](int64_t p0, int64_t p1, int) {
    ScratchFrame f;
    PanelBlockK* panel = f.take<PanelBlockK>(nb);  // [nb]
    alignas(64) float acc[2 * kTile * kTile];
    TileScope tiles(cfg);
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t o = p * kTile;
      const int nr = static_cast<int>(std::min<int64_t>(kTile, n_out - o));
      unpack_panel_k(t, wb + o * row_bytes, row_bytes, nr, nb, panel);
      for (int64_t T = 0; T < n_tiles; T += 2) {
        const int nt = T + 1 < n_tiles ? 2 : 1;
        tiles_k(pairs, nt, panel, nb, n_in, acts, T, acc);
        for (int j = 0; j < nt; ++j) {
          store_panel(acc + j * kTile * kTile, nr, (T + j) * kTile, a.n_tok, y + o, n_out);
        }
      }
    }
  });
}

// ---- 32-blocks ---------------------------------------------------------------------------------

struct alignas(64) PanelBlock8 {  // one 32-block of a 16-row panel
  int8_t v[kTile][32];            // u - off
  float d[kTile], m[kTile];
};

struct Acts8 {
  std::vector<int8_t> q;  // [tile][n_in / 4][16][4]
  std::vector<float> d;   // [tile][nb][16]
  std::vector<float> s;   // [tile][nb][16]
};

// Signed values (u - off) of one block, element order (matmul_q8.h): v: [32].
inline __m256i values_32(DType t, const uint8_t* blk) {
  if (t == DType::Q8_0) return load256(blk + 2);
  const int qs_off = t == DType::Q4_0 ? 2 : t == DType::Q4_1 ? 4 : t == DType::Q5_0 ? 6 : 8;
  const __m128i q = load128(blk + qs_off);
  const __m128i m4 = _mm_set1_epi8(0x0F);
  __m256i u = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
  if (t == DType::Q5_0 || t == DType::Q5_1) {
    uint32_t qh;
    std::memcpy(&qh, blk + qs_off - 4, 4);
    u = _mm256_or_si256(u, _mm256_maskz_set1_epi8(static_cast<__mmask32>(qh), 0x10));
  }
  const int off = t == DType::Q4_0 ? 8 : t == DType::Q5_0 ? 16 : 0;
  return _mm256_sub_epi8(u, _mm256_set1_epi8(static_cast<char>(off)));
}

// Rows o .. o + nr - 1 of matrix w (GGUF rows, or a repacked layout's blocks rebuilt).
void unpack_panel_8(DType t, const uint8_t* w, int64_t row_bytes, int64_t o, int nr, int64_t nb,
                    PanelBlock8* pk) {
  const int bb = q8_block_bytes(t);
  const DType gt = gguf_type(t);
  const bool with_min = gt == DType::Q4_1 || gt == DType::Q5_1;
  uint8_t tmp[64];  // a repacked row's block, rebuilt
  for (int64_t b = 0; b < nb; ++b) {
    PanelBlock8& p = pk[b];
    for (int r = 0; r < kTile; ++r) {
      if (r >= nr) {
        std::memset(p.v[r], 0, 32);
        p.d[r] = p.m[r] = 0.0f;
        continue;
      }
      const uint8_t* blk = w + (o + r) * row_bytes + b * bb;
      if (is_repacked(t)) {
        gguf_block_of(t, w, nb, o + r, b, tmp);
        blk = tmp;
      }
      store256(p.v[r], values_32(gt, blk));
      p.d[r] = half_at(blk);
      p.m[r] = with_min ? half_at(blk + 2) : 0.0f;
    }
  }
}

template <bool kMin, int NT>
void panel_tiles_8(const PanelBlock8* pk, int64_t nb, int64_t n_in, const Acts8& a, int64_t T0,
                   float* acc) {  // acc: [NT][16][16], then summs [NT][16][16]
  alignas(64) int32_t c[2][kTile * kTile];
  std::fill(acc, acc + 2 * NT * kTile * kTile, 0.0f);
  float* summs = acc + NT * kTile * kTile;
  const int8_t* q0 = a.q.data() + T0 * n_in * kTile;
  const int8_t* q1 = q0 + n_in * kTile;
  for (int64_t b = 0; b < nb; ++b) {
    _tile_zero(0);
    _tile_loadd(2, pk[b].v[0], 32);
    _tile_loadd(3, q0 + b * 8 * 64, 64);
    _tile_dpbssd(0, 2, 3);
    if constexpr (NT == 2) {
      _tile_zero(1);
      _tile_loadd(4, q1 + b * 8 * 64, 64);
      _tile_dpbssd(1, 2, 4);
    }
    _tile_stored(0, c[0], 64);
    if constexpr (NT == 2) _tile_stored(1, c[1], 64);
    for (int t = 0; t < NT; ++t) {
      const int64_t i = ((T0 + t) * nb + b) * kTile;
      const __m512 dx = _mm512_loadu_ps(a.d.data() + i);
      const __m512 sx = _mm512_loadu_ps(a.s.data() + i);
      float* at = acc + t * kTile * kTile;
      float* st = summs + t * kTile * kTile;
      for (int r = 0; r < kTile; ++r) {
        const __m512 dd = _mm512_mul_ps(_mm512_set1_ps(pk[b].d[r]), dx);
        const __m512 pi = _mm512_cvtepi32_ps(_mm512_loadu_si512(c[t] + r * kTile));
        _mm512_storeu_ps(at + r * kTile, _mm512_fmadd_ps(dd, pi, _mm512_loadu_ps(at + r * kTile)));
        if constexpr (kMin) {
          const __m512 ms = _mm512_mul_ps(_mm512_set1_ps(pk[b].m[r]), sx);
          _mm512_storeu_ps(st + r * kTile, _mm512_add_ps(_mm512_loadu_ps(st + r * kTile), ms));
        }
      }
    }
  }
  if constexpr (kMin) {
    for (int i = 0; i < NT * kTile * kTile; ++i) acc[i] = acc[i] + summs[i];
  }
}

void run_8(DType t, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a, float* y) {
  Acts8& acts = workspace_object<Acts8>();  // the caller's; workers reach it through `acts`
  const int64_t nb = n_in / 32, row_bytes = nb * q8_block_bytes(t);
  to_vnni(a.q.data(), a.n_tok, n_in, acts.q);
  per_tile(a.d.data(), a.n_tok, nb, acts.d);
  per_tile(a.s.data(), a.n_tok, nb, acts.s);
  const int64_t n_panels = (n_out + kTile - 1) / kTile, n_tiles = (a.n_tok + kTile - 1) / kTile;
  const bool with_min = gguf_type(t) == DType::Q4_1 || gguf_type(t) == DType::Q5_1;
  const auto* wb = static_cast<const uint8_t*>(w);
  const TileConfig cfg = config_q8();
  parallel_ranges(n_panels, [&](int64_t p0, int64_t p1, int) {
    ScratchFrame f;
    PanelBlock8* panel = f.take<PanelBlock8>(nb);  // [nb]
    alignas(64) float acc[4 * kTile * kTile];
    TileScope tiles(cfg);
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t o = p * kTile;
      const int nr = static_cast<int>(std::min<int64_t>(kTile, n_out - o));
      unpack_panel_8(t, wb, row_bytes, o, nr, nb, panel);
      for (int64_t T = 0; T < n_tiles; T += 2) {
        const int nt = T + 1 < n_tiles ? 2 : 1;
        if (nt == 2) {
          with_min ? panel_tiles_8<true, 2>(panel, nb, n_in, acts, T, acc)
                   : panel_tiles_8<false, 2>(panel, nb, n_in, acts, T, acc);
        } else {
          with_min ? panel_tiles_8<true, 1>(panel, nb, n_in, acts, T, acc)
                   : panel_tiles_8<false, 1>(panel, nb, n_in, acts, T, acc);
        }
        for (int j = 0; j < nt; ++j) {
          store_panel(acc + j * kTile * kTile, nr, (T + j) * kTile, a.n_tok, y + o, n_out);
        }
      }
    }
  });
}

#endif  // FASA_AVX512

}  // namespace

bool has_amx_path(DType t) { return FASA_AVX512 && (block_bytes(t) > 0 || q8_block_bytes(t) > 0); }

bool matmul_q8k_amx(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a,
                    float* y) {
#if FASA_AVX512
  if (block_bytes(type) == 0) return false;
  FASA_DCHECK(n_in % 256 == 0 && a.n_in == n_in);
  if (n_out > 0 && a.n_tok > 0) run_k(type, w, n_out, n_in, a, y);
  return true;
#else
  (void)type, (void)w, (void)n_out, (void)n_in, (void)a, (void)y;
  return false;
#endif
}

bool matmul_q8_amx(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a,
                   float* y) {
#if FASA_AVX512
  if (q8_block_bytes(type) == 0) return false;
  FASA_DCHECK(n_in % 32 == 0 && a.n_in == n_in);
  if (n_out > 0 && a.n_tok > 0) run_8(type, w, n_out, n_in, a, y);
  return true;
#else
  (void)type, (void)w, (void)n_out, (void)n_in, (void)a, (void)y;
  return false;
#endif
}

}  // namespace fasa::FASA_ISA_NS

#if FASA_AVX512
#pragma GCC pop_options
#endif

#include "fasa/core/isa_end.h"
