// Integer block-quant matmul over q8 activations (see matmul_q8.h for the exact numerics).
//
// Structure: like matmul.isa.cpp, workers own contiguous groups of kRows output rows; a register
// micro-kernel computes R rows x T tokens at once. Signed weight codes are stored as unsigned
// codes u with an offset (value u - off), so one VNNI dpbusd (u8 x s8) gives sum u*q per lane and
// the offset is folded in exactly through the precomputed lane sums of q: the dpbusd accumulator
// starts at -off * sum4. The result is the same integer either way. Matrices repacked at load
// (kernels/repack.h: Q4_0, Q4_1, Q8_0, 16 rows interleaved) take 16-row kernels on AVX-512 (one
// zmm lane per row) and, on the other paths, have each group's GGUF rows rebuilt first.
#include "fasa/kernels/matmul_q8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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

#include "fasa/kernels/simd_common.inc.h"

constexpr int kRows = 4;
constexpr int kToks = 4;
constexpr int64_t kMinParallelMacs = 1 << 16;

// Block layouts (bytes): Q4_0 {d, qs[16]}; Q4_1 {d, m, qs[16]}; Q5_0 {d, qh[4], qs[16]};
// Q5_1 {d, m, qh[4], qs[16]}; Q8_0 {d, qs[32] int8}. d and m are fp16.
struct Layout {
  int bytes = 0;
  int off = 0;  // weight value = (u - off) * d (+ m)
  bool has_min = false;
};

constexpr Layout layout_of(DType t) {
  switch (t) {
    case DType::Q4_0: return {18, 8, false};
    case DType::Q4_1: return {20, 0, true};
    case DType::Q5_0: return {22, 16, false};
    case DType::Q5_1: return {24, 0, true};
    case DType::Q8_0: return {34, 128, false};
    case DType::Q4_0_R16: return layout_of(DType::Q4_0);  // per row; 16 rows per group block
    case DType::Q4_1_R16: return layout_of(DType::Q4_1);
    case DType::Q8_0_R16: return layout_of(DType::Q8_0);
    default: return {};
  }
}

// ---- portable ---------------------------------------------------------------------------------

// Unsigned codes of one block, in element order. u: [32]
void unpack_portable(DType t, const uint8_t* blk, uint8_t* u) {
  switch (t) {
    case DType::Q4_0:
    case DType::Q4_1: {
      const uint8_t* qs = blk + (t == DType::Q4_0 ? 2 : 4);
      for (int j = 0; j < 16; ++j) {
        u[j] = qs[j] & 0x0F;
        u[j + 16] = qs[j] >> 4;
      }
      return;
    }
    case DType::Q5_0:
    case DType::Q5_1: {
      const uint8_t* qh_p = blk + (t == DType::Q5_0 ? 2 : 4);
      uint32_t qh;
      std::memcpy(&qh, qh_p, 4);
      const uint8_t* qs = qh_p + 4;
      for (int j = 0; j < 16; ++j) {
        u[j] = static_cast<uint8_t>((qs[j] & 0x0F) | (((qh >> j) & 1u) << 4));
        u[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
      }
      return;
    }
    default:  // Q8_0
      for (int j = 0; j < 32; ++j) u[j] = static_cast<uint8_t>(blk[2 + j] ^ 0x80);
      return;
  }
}

inline float hsum8_portable(const float* a) {
  float r[4];
  for (int i = 0; i < 4; ++i) r[i] = a[i + 4] + a[i];
  return (r[0] + r[2]) + (r[1] + r[3]);
}

float dot_portable(DType t, const uint8_t* row, const Q8Acts& a, int64_t tok) {
  const Layout L = layout_of(t);
  const int64_t nb = a.n_in / 32;
  float acc[8] = {};
  float summs = 0.0f;
  uint8_t u[32];
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * L.bytes;
    unpack_portable(t, blk, u);
    const int8_t* q = a.q.data() + tok * a.n_in + b * 32;
    const float scale = half_at(blk) * a.d[tok * nb + b];
    for (int k = 0; k < 8; ++k) {
      int32_t lane = 0;
      for (int j = 4 * k; j < 4 * k + 4; ++j) lane += (static_cast<int32_t>(u[j]) - L.off) * q[j];
      acc[k] = std::fma(scale, static_cast<float>(lane), acc[k]);
    }
    if (L.has_min) summs = summs + half_at(blk + 2) * a.s[tok * nb + b];
  }
  return L.has_min ? hsum8_portable(acc) + summs : hsum8_portable(acc);
}

void rows_portable(DType t, const uint8_t* w, int64_t row_bytes, int64_t o_begin, int64_t o_end,
                   const Q8Acts& a, float* y, int64_t n_out) {
  for (int64_t o = o_begin; o < o_end; ++o) {
    for (int64_t tok = 0; tok < a.n_tok; ++tok) {
      y[tok * n_out + o] = dot_portable(t, w + o * row_bytes, a, tok);
    }
  }
}

// ---- AVX2 and AVX-512 VNNI ---------------------------------------------------------------------
// One kernel for both sets; only the block's integer dot product differs (the same integer):
// AVX-512 VNNI's dpbusd, or AVX2's maddubs (u8 x s8 pairs to i16) + madd (pairs to i32). Pairs
// cannot saturate i16: 4/5-bit codes give at most 2 * 31 * 127; Q8_0 uses the signed form
// maddubs(|w|, sign(x, w)), at most 2 * 128 * 127.

#if FASA_AVX2
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

inline float half_simd(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

template <DType T>
inline __m256i unpack_simd(const uint8_t* blk) {
  if constexpr (T == DType::Q8_0) {
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)),
                            _mm256_set1_epi8(static_cast<char>(0x80)));
  } else {
    constexpr int qs_off = T == DType::Q4_0 ? 2 : T == DType::Q4_1 ? 4 : T == DType::Q5_0 ? 6 : 8;
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + qs_off));
    const __m128i m4 = _mm_set1_epi8(0x0F);
    __m256i u = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
    if constexpr (T == DType::Q5_0 || T == DType::Q5_1) {
      uint32_t qh;
      std::memcpy(&qh, blk + qs_off - 4, 4);
#if FASA_AVX512
      u = _mm256_or_si256(u, _mm256_maskz_set1_epi8(static_cast<__mmask32>(qh), 0x10));
#else
      // Byte j of the 32 gets bit j of qh: spread qh's byte j / 8 to it, test bit j % 8.
      const __m256i spread =
          _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                              _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                0x0101010101010101, 0));
      const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
      const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
      u = _mm256_or_si256(u, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
#endif
    }
    return u;
  }
}

// Lane k (of 8): sum over elements 4k..4k+3 of (u - off) * x, given bias = -off * sum4 (unused
// by AVX2's signed Q8_0 form, which reads the signed weights w = u - 128 directly).
template <DType T>
inline __m256i block_lanes(__m256i bias, __m256i u, __m256i xq) {
#if FASA_AVX512
  return _mm256_dpbusd_epi32(bias, u, xq);
#else
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (T == DType::Q8_0) {
    const __m256i w = _mm256_xor_si256(u, _mm256_set1_epi8(static_cast<char>(0x80)));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(xq, w)),
                             ones);
  } else {
    return _mm256_add_epi32(bias, _mm256_madd_epi16(_mm256_maddubs_epi16(u, xq), ones));
  }
#endif
}

// Whether block_lanes reads bias.
template <DType T>
constexpr bool uses_bias() {
  return layout_of(T).off != 0 && (FASA_AVX512 || T != DType::Q8_0);
}

// R rows x NT tokens; rows at w (stride row_bytes), tokens tok0.. ; y at [tok, o].
template <DType T, int R, int NT>
void kernel_simd(const uint8_t* w, int64_t row_bytes, const Q8Acts& a, int64_t tok0, float* y,
                 int64_t ldy) {
  constexpr Layout L = layout_of(T);
  const int64_t nb = a.n_in / 32;
  __m256 acc[R][NT];
  float summs[R][NT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) {
      acc[r][t] = _mm256_setzero_ps();
      summs[r][t] = 0.0f;
    }
  }
  for (int64_t b = 0; b < nb; ++b) {
    __m256i u[R];
    float dw[R], mw[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = w + r * row_bytes + b * L.bytes;
      u[r] = unpack_simd<T>(blk);
      dw[r] = half_simd(blk);
      if constexpr (L.has_min) mw[r] = half_simd(blk + 2);
    }
    for (int t = 0; t < NT; ++t) {
      const int64_t tok = tok0 + t;
      const __m256i xq =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q.data() + tok * a.n_in + b * 32));
      __m256i bias = _mm256_setzero_si256();
      if constexpr (uses_bias<T>()) {
        const __m256i s4 = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(a.sum4.data() + (tok * nb + b) * 8));
        bias = _mm256_mullo_epi32(s4, _mm256_set1_epi32(-L.off));
      }
      const float dx = a.d[tok * nb + b];
      for (int r = 0; r < R; ++r) {
        const __m256i lanes = block_lanes<T>(bias, u[r], xq);
        acc[r][t] =
            _mm256_fmadd_ps(_mm256_set1_ps(dw[r] * dx), _mm256_cvtepi32_ps(lanes), acc[r][t]);
        if constexpr (L.has_min) summs[r][t] = summs[r][t] + mw[r] * a.s[tok * nb + b];
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < R; ++r) {
      const float h = hsum8_simd(acc[r][t]);
      y[t * ldy + r] = L.has_min ? h + summs[r][t] : h;
    }
  }
}

template <DType T, int R>
void kernel_simd_toks(int nt, const uint8_t* w, int64_t row_bytes, const Q8Acts& a, int64_t tok0,
                      float* y, int64_t ldy) {
  switch (nt) {
    case 1: kernel_simd<T, R, 1>(w, row_bytes, a, tok0, y, ldy); return;
    case 2: kernel_simd<T, R, 2>(w, row_bytes, a, tok0, y, ldy); return;
    case 3: kernel_simd<T, R, 3>(w, row_bytes, a, tok0, y, ldy); return;
    default: kernel_simd<T, R, kToks>(w, row_bytes, a, tok0, y, ldy); return;
  }
}

template <DType T>
void rows_simd(const uint8_t* w, int64_t row_bytes, int64_t o_begin, int64_t o_end, const Q8Acts& a,
               float* y, int64_t n_out) {
  for (int64_t o = o_begin; o < o_end; o += kRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kRows, o_end - o));
    // Prefetch the rows two groups ahead: at one token the loads would otherwise stall.
    if (o + 3 * kRows <= o_end) {
      const uint8_t* next = w + (o + 2 * kRows) * row_bytes;
      for (int64_t off = 0; off < kRows * row_bytes; off += 64)
        __builtin_prefetch(next + off, 0, 2);
    }
    for (int64_t tok = 0; tok < a.n_tok; tok += kToks) {
      const int nt = static_cast<int>(std::min<int64_t>(kToks, a.n_tok - tok));
      const uint8_t* wr = w + o * row_bytes;
      float* yo = y + tok * n_out + o;
      switch (nr) {
        case 1: kernel_simd_toks<T, 1>(nt, wr, row_bytes, a, tok, yo, n_out); break;
        case 2: kernel_simd_toks<T, 2>(nt, wr, row_bytes, a, tok, yo, n_out); break;
        case 3: kernel_simd_toks<T, 3>(nt, wr, row_bytes, a, tok, yo, n_out); break;
        default: kernel_simd_toks<T, kRows>(nt, wr, row_bytes, a, tok, yo, n_out); break;
      }
    }
  }
}

#pragma GCC diagnostic pop
#endif  // FASA_AVX2

// ---- repacked 16-row groups (AVX-512) ---------------------------------------------------------
// One zmm lane per row of the group (repack.h): acc[k] holds lane k of the 16 rows, and hsum8
// becomes vertical adds in its tree, so every row gets exactly the integers and the float
// sequence of matmul_q8.h (and of kernel_simd on the GGUF rows).
#if FASA_AVX512
constexpr int kR16Toks = 2;  // tokens per pass over a group (8 accumulators a token)
// Group blocks prefetched ahead: at one token the loads stall otherwise (Gemma 3's 178 MB output
// matrix decodes 10 % slower than the GGUF rows with 3 blocks ahead, faster with 8 or 16).
constexpr int kR16Ahead = 16;

// Group g's 16 rows (g: its first group block), tokens tok0 .. tok0 + NT - 1: y[t * ldy + r].
template <DType T, int NT>
void kernel_r16(const uint8_t* g, int64_t nb, const Q8Acts& a, int64_t tok0, float* y,
                int64_t ldy) {
  constexpr Layout L = layout_of(T);
  constexpr int64_t gb = 16 * L.bytes;
  constexpr int kCodes = T == DType::Q8_0 ? 512 : 256;  // code bytes of a group block
  __m512 acc[NT][8];                                    // [token][lane k], 16 rows each
  __m512 summs[NT];
  for (int t = 0; t < NT; ++t) {
    summs[t] = _mm512_setzero_ps();
    for (int k = 0; k < 8; ++k) acc[t][k] = _mm512_setzero_ps();
  }
  const __m512i m4 = _mm512_set1_epi8(15);
  for (int64_t b = 0; b < nb; ++b, g += gb) {
    for (int64_t o = 0; o < gb; o += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(g + kR16Ahead * gb + o), _MM_HINT_T1);
    }
    const __m512 d =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + kCodes)));
    __m512 dd[NT];
    const int8_t* q[NT];
    const int32_t* s4[NT];
    for (int t = 0; t < NT; ++t) {
      const int64_t i = (tok0 + t) * nb + b;
      dd[t] = _mm512_mul_ps(d, _mm512_set1_ps(a.d[i]));
      q[t] = a.q.data() + (tok0 + t) * a.n_in + b * 32;
      s4[t] = a.sum4.data() + i * 8;
      if constexpr (L.has_min) {
        const __m512 m =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + kCodes + 32)));
        summs[t] = _mm512_add_ps(summs[t], _mm512_mul_ps(m, _mm512_set1_ps(a.s[i])));
      }
    }
    // Lane k's integer: dpbusd of the codes u with q, from the bias -off * sum4[k].
    auto lane = [&](int t, int k, __m512i u) {
      const __m512i bias =
          L.off != 0 ? _mm512_set1_epi32(-L.off * s4[t][k]) : _mm512_setzero_si512();
      const __m512i v = _mm512_dpbusd_epi32(bias, u, bcast4(q[t] + 4 * k));
      acc[t][k] = _mm512_fmadd_ps(dd[t], _mm512_cvtepi32_ps(v), acc[t][k]);
    };
    if constexpr (T == DType::Q8_0) {
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const __m512i u = _mm512_xor_si512(_mm512_loadu_si512(g + 64 * k), _mm512_set1_epi8(-128));
        for (int t = 0; t < NT; ++t) lane(t, k, u);
      }
    } else {
#pragma GCC unroll 4
      for (int kk = 0; kk < 4; ++kk) {
        const __m512i v = _mm512_loadu_si512(g + 64 * kk);
        const __m512i lo = _mm512_and_si512(v, m4);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        for (int t = 0; t < NT; ++t) {
          lane(t, kk, lo);
          lane(t, kk + 4, hi);
        }
      }
    }
  }
  for (int t = 0; t < NT; ++t) {  // hsum8's tree: ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7))
    const __m512* a8 = acc[t];
    __m512 h =
        _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a8[0], a8[4]), _mm512_add_ps(a8[2], a8[6])),
                      _mm512_add_ps(_mm512_add_ps(a8[1], a8[5]), _mm512_add_ps(a8[3], a8[7])));
    if constexpr (L.has_min) h = _mm512_add_ps(h, summs[t]);
    _mm512_storeu_ps(y + t * ldy, h);
  }
}

template <DType T>
void group_r16(const uint8_t* g, int64_t nb, const Q8Acts& a, float* y0, int64_t ldy) {
  for (int64_t tok = 0; tok < a.n_tok; tok += kR16Toks) {
    if (a.n_tok - tok >= 2) {
      kernel_r16<T, 2>(g, nb, a, tok, y0 + tok * ldy, ldy);
    } else {
      kernel_r16<T, 1>(g, nb, a, tok, y0 + tok * ldy, ldy);
    }
  }
}
static_assert(kR16Toks == 2, "group_r16 tiles by 2");
#endif  // FASA_AVX512

#if FASA_AVX2
void rows_simd_any(DType t, const uint8_t* w, int64_t row_bytes, int64_t o0, int64_t o1,
                   const Q8Acts& a, float* y, int64_t n_out) {
  switch (t) {
    case DType::Q4_0: rows_simd<DType::Q4_0>(w, row_bytes, o0, o1, a, y, n_out); return;
    case DType::Q4_1: rows_simd<DType::Q4_1>(w, row_bytes, o0, o1, a, y, n_out); return;
    case DType::Q5_0: rows_simd<DType::Q5_0>(w, row_bytes, o0, o1, a, y, n_out); return;
    case DType::Q5_1: rows_simd<DType::Q5_1>(w, row_bytes, o0, o1, a, y, n_out); return;
    default: rows_simd<DType::Q8_0>(w, row_bytes, o0, o1, a, y, n_out); return;
  }
}
#endif

using RowsFn = void (*)(DType, const uint8_t*, int64_t, int64_t, int64_t, const Q8Acts&, float*,
                        int64_t);

// Rows [o0, o1) (multiples of 16) of a repacked matrix w: its group's GGUF rows rebuilt into a
// scratch, then `base` on them (the same bits as on the file's rows).
void rows_rebuilt(RowsFn base, DType t, const uint8_t* w, int64_t row_bytes, int64_t o0, int64_t o1,
                  const Q8Acts& a, float* y, int64_t n_out) {
  const Layout L = layout_of(t);
  const int64_t nb = a.n_in / 32;
  ScratchFrame f;
  uint8_t* rows = f.take<uint8_t>(static_cast<size_t>(kRepackRows * row_bytes));  // [16, row_bytes]
  for (int64_t o = o0; o < o1; o += kRepackRows) {
    for (int r = 0; r < kRepackRows; ++r) {
      for (int64_t b = 0; b < nb; ++b) {
        gguf_block_of(t, w, nb, o + r, b, rows + r * row_bytes + b * L.bytes);
      }
    }
    base(gguf_type(t), rows, row_bytes, 0, kRepackRows, a, y + o, n_out);
  }
}
void rows_r16_portable(DType t, const uint8_t* w, int64_t row_bytes, int64_t o0, int64_t o1,
                       const Q8Acts& a, float* y, int64_t n_out) {
  rows_rebuilt(&rows_portable, t, w, row_bytes, o0, o1, a, y, n_out);
}
#if FASA_AVX2
void rows_r16_simd(DType t, const uint8_t* w, int64_t row_bytes, int64_t o0, int64_t o1,
                   const Q8Acts& a, float* y, int64_t n_out) {
#if FASA_AVX512
  const int64_t nb = a.n_in / 32;
  for (int64_t o = o0; o < o1; o += kRepackRows) {
    const uint8_t* g = w + o * row_bytes;  // the group's blocks, back to back
    switch (t) {
      case DType::Q4_0_R16: group_r16<DType::Q4_0>(g, nb, a, y + o, n_out); break;
      case DType::Q4_1_R16: group_r16<DType::Q4_1>(g, nb, a, y + o, n_out); break;
      default: group_r16<DType::Q8_0>(g, nb, a, y + o, n_out); break;
    }
  }
#else
  rows_rebuilt(&rows_simd_any, t, w, row_bytes, o0, o1, a, y, n_out);
#endif
}
#endif

void run(RowsFn rows, DType t, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a,
         float* y) {
  if (n_out <= 0 || a.n_tok <= 0) return;
  FASA_DCHECK(layout_of(t).bytes > 0 && n_in % 32 == 0 && a.n_in == n_in);
  FASA_DCHECK(!is_repacked(t) || n_out % kRepackRows == 0);
  const int64_t row_bytes = n_in / 32 * layout_of(t).bytes;
  const auto* wb = static_cast<const uint8_t*>(w);
  const int64_t group = is_repacked(t) ? kRepackRows : kRows;  // rows a worker takes at a time
  const int64_t n_groups = (n_out + group - 1) / group;
  auto work = [&](int64_t g0, int64_t g1, int) {
    rows(t, wb, row_bytes, g0 * group, std::min(g1 * group, n_out), a, y, n_out);
  };
  if (n_out * n_in * a.n_tok < kMinParallelMacs) {
    team_single([&] { work(0, n_groups, 0); });  // one worker, also in a team's collective code
  } else {
    parallel_ranges(n_groups, work);
  }
}

}  // namespace

bool has_q8_path(DType t) { return layout_of(t).bytes > 0; }

void quantize_acts_q8(const float* x, int64_t n_tok, int64_t n_in, Q8Acts& out) {
  FASA_CHECK(n_in % 32 == 0);
  const int64_t nb = n_in / 32;
  out.n_tok = n_tok;
  out.n_in = n_in;
  out.q.resize(static_cast<size_t>(n_tok * n_in));
  out.d.resize(static_cast<size_t>(n_tok * nb));
  out.s.resize(out.d.size());
  out.sum4.resize(out.d.size() * 8);
  for (int64_t i = 0; i < n_tok * nb; ++i) {
    const float* xb = x + i * 32;
    int8_t* q = out.q.data() + i * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
      q[j] = static_cast<int8_t>(std::nearbyint(xb[j] * id));  // half to even (default mode)
      sum += q[j];
    }
    for (int k = 0; k < 8; ++k) {
      out.sum4[i * 8 + k] = q[4 * k] + q[4 * k + 1] + q[4 * k + 2] + q[4 * k + 3];
    }
    out.d[i] = fp16_to_fp32(fp32_to_fp16(d));
    out.s[i] = fp16_to_fp32(fp32_to_fp16(d * static_cast<float>(sum)));
  }
}

namespace detail {
void matmul_q8_portable(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a,
                        float* y) {
  run(is_repacked(type) ? &rows_r16_portable : &rows_portable, type, w, n_out, n_in, a, y);
}
}  // namespace detail

void matmul_q8(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a, float* y) {
  const bool r16 = is_repacked(type);
#if FASA_AVX2
  run(r16 ? &rows_r16_simd : &rows_simd_any, type, w, n_out, n_in, a, y);
#else
  run(r16 ? &rows_r16_portable : &rows_portable, type, w, n_out, n_in, a, y);
#endif
}

void matmul_q8_rows(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a,
                    int64_t o0, int64_t o1, float* y) {
  if (o0 >= o1 || a.n_tok <= 0) return;
  FASA_DCHECK(layout_of(type).bytes > 0 && n_in % 32 == 0 && a.n_in == n_in && 0 <= o0 &&
              o1 <= n_out);
  const int64_t row_bytes = n_in / 32 * layout_of(type).bytes;
  const auto* wb = static_cast<const uint8_t*>(w);
  FASA_DCHECK(!is_repacked(type) || (o0 % kRepackRows == 0 && o1 % kRepackRows == 0));
#if FASA_AVX2
  (is_repacked(type) ? &rows_r16_simd : &rows_simd_any)(type, wb, row_bytes, o0, o1, a, y, n_out);
#else
  (is_repacked(type) ? &rows_r16_portable : &rows_portable)(type, wb, row_bytes, o0, o1, a, y,
                                                            n_out);
#endif
}

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
