// Fast dequantization: AVX-512 code for every supported type when the build targets it,
// otherwise portable loops written so the compiler vectorizes them (detail::
// dequantize_row_portable, also used by tests). Every path gives the same bits as
// ref::dequantize_row (see the rounding note in ref/dequant_ref.cpp): d * q is exact in fp32, so
// an FMA and a separate multiply-add agree, and Q6_K keeps the order (d * scale) * q.
#include "fasa/kernels/dequant.h"

#include <cstring>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/core/isa_intrin.h"
#include "fasa/kernels/isa_api.h"
#include "fasa/kernels/matmul.h"

#include "fasa/core/isa_begin.h"

namespace fasa::FASA_ISA_NS {

namespace {

#include "fasa/kernels/simd_common.inc.h"

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Branch-free fp16 -> fp32 with the same bits as fp16_to_fp32, so the loop vectorizes.
inline float fp16_to_fp32_inline(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  const float sub = static_cast<float>(mant) * 0x1p-24f;  // exp == 0
  uint32_t sub_bits;
  std::memcpy(&sub_bits, &sub, 4);
  const uint32_t normal = ((exp + 112u) << 23) | (mant << 13);
  const uint32_t special = 0x7f800000u | (mant << 13) | (mant != 0 ? 0x400000u : 0u);
  const uint32_t bits = sign | (exp == 0 ? sub_bits : (exp == 31 ? special : normal));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// ---- portable per-type rows -------------------------------------------------------------------

void row_f16_portable(const uint8_t* s, float* y, int64_t n) {  // y: [n]
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, s + 2 * i, 2);
    y[i] = fp16_to_fp32_inline(h);
  }
}

void row_bf16_portable(const uint8_t* s, float* y, int64_t n) {  // y: [n]
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, s + 2 * i, 2);
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    std::memcpy(y + i, &u, 4);
  }
}

void row_q4_0_portable(const uint8_t* s, float* y, int64_t n_blocks) {  // y: [n_blocks * 32]
  for (int64_t b = 0; b < n_blocks; ++b, s += 18, y += 32) {
    const float d = half_at(s);
    const uint8_t* qs = s + 2;
    // Low nibbles, then high nibbles, each one contiguous 16-float store. Without the pragmas
    // GCC 12 unrolls these loops completely and then fails to vectorize the straight-line code.
#pragma GCC unroll 1
    for (int j = 0; j < 16; ++j) y[j] = d * static_cast<float>((qs[j] & 0x0f) - 8);
#pragma GCC unroll 1
    for (int j = 0; j < 16; ++j) y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

void row_q4_1_portable(const uint8_t* s, float* y, int64_t n_blocks) {  // y: [n_blocks * 32]
  for (int64_t b = 0; b < n_blocks; ++b, s += 20, y += 32) {
    const float d = half_at(s);
    const float m = half_at(s + 2);
    const uint8_t* qs = s + 4;
#pragma GCC unroll 1
    for (int j = 0; j < 16; ++j) y[j] = d * static_cast<float>(qs[j] & 0x0f) + m;
#pragma GCC unroll 1
    for (int j = 0; j < 16; ++j) y[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
  }
}

template <bool has_min>
void row_q5_portable(const uint8_t* s, float* y, int64_t n_blocks) {
  // y: [n_blocks * 32]; Q5_0 (has_min = false, offset -16) or Q5_1 (+ m).
  constexpr int64_t block_bytes = has_min ? 24 : 22;
  for (int64_t b = 0; b < n_blocks; ++b, s += block_bytes, y += 32) {
    const float d = half_at(s);
    const float m = has_min ? half_at(s + 2) : 0.0f;
    const uint32_t qh = load_u32(s + (has_min ? 4 : 2));
    const uint8_t* qs = s + (has_min ? 8 : 6);
    const int offset = has_min ? 0 : 16;
    for (int j = 0; j < 16; ++j) {
      const int q0 = ((qs[j] & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4)) - offset;
      const int q1 = ((qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4)) - offset;
      if constexpr (has_min) {
        y[j] = d * static_cast<float>(q0) + m;
        y[j + 16] = d * static_cast<float>(q1) + m;
      } else {
        y[j] = d * static_cast<float>(q0);
        y[j + 16] = d * static_cast<float>(q1);
      }
    }
  }
}

void row_q8_0_portable(const uint8_t* s, float* y, int64_t n_blocks) {  // y: [n_blocks * 32]
  for (int64_t b = 0; b < n_blocks; ++b, s += 34, y += 32) {
    const float d = half_at(s);
    const int8_t* qs = reinterpret_cast<const int8_t*>(s + 2);
    for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(qs[j]);
  }
}

void row_q6_k_portable(const uint8_t* s, float* y, int64_t n_blocks) {  // y: [n_blocks * 256]
  for (int64_t b = 0; b < n_blocks; ++b, s += 210, y += 256) {
    const int8_t* scales = reinterpret_cast<const int8_t*>(s + 192);
    const float d = half_at(s + 208);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = s + 64 * half;
      const uint8_t* qh = s + 128 + 32 * half;
      float* hy = y + 128 * half;
      for (int c = 0; c < 2; ++c) {  // l in [16c, 16c + 16): one scale per output group of 16
        const float d1 = d * static_cast<float>(scales[8 * half + c + 0]);
        const float d2 = d * static_cast<float>(scales[8 * half + c + 2]);
        const float d3 = d * static_cast<float>(scales[8 * half + c + 4]);
        const float d4 = d * static_cast<float>(scales[8 * half + c + 6]);
        for (int j = 0; j < 16; ++j) {
          const int l = 16 * c + j;
          const int q1 = (ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4);
          const int q2 = (ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4);
          const int q3 = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
          const int q4 = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
          hy[l] = d1 * static_cast<float>(q1 - 32);
          hy[l + 32] = d2 * static_cast<float>(q2 - 32);
          hy[l + 64] = d3 * static_cast<float>(q3 - 32);
          hy[l + 96] = d4 * static_cast<float>(q4 - 32);
        }
      }
    }
  }
}

// Q2_K and Q3_K: two halves of 128, each four 2-bit planes (shift 2 j) of two groups of 16, one
// scale per group (docs in tests/support/ref/dequant_ref.cpp). y: [n_blocks * 256]
void row_q2_k_portable(const uint8_t* s, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, s += 84, y += 256) {
    const float d = half_at(s + 80), dmin = half_at(s + 82);
    const uint8_t* sc = s;
    float* out = y;
    for (int n = 0; n < 2; ++n) {
      const uint8_t* q = s + 16 + 32 * n;
      for (int j = 0; j < 4; ++j) {
        for (int g = 0; g < 2; ++g) {
          const uint8_t code = *sc++;
          const float dl = d * static_cast<float>(code & 15);
          const float ml = dmin * static_cast<float>(code >> 4);
          for (int l = 0; l < 16; ++l) {
            *out++ = dl * static_cast<float>((q[16 * g + l] >> (2 * j)) & 3) - ml;
          }
        }
      }
    }
  }
}

void row_q3_k_portable(const uint8_t* s, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, s += 110, y += 256) {
    const uint8_t* hm = s;
    const uint8_t* packed = s + 96;
    const float d = half_at(s + 108);
    int8_t scales[16];  // the 6-bit scales, minus 32
    for (int i = 0; i < 8; ++i) {
      const int hi = packed[8 + i % 4] >> (2 * (i / 4));  // bits 0-1: scale i, 4-5: scale i + 8
      scales[i] = static_cast<int8_t>(((packed[i] & 15) | ((hi & 3) << 4)) - 32);
      scales[i + 8] = static_cast<int8_t>(((packed[i] >> 4) | (((hi >> 4) & 3) << 4)) - 32);
    }
    float* out = y;
    for (int n = 0; n < 2; ++n) {
      const uint8_t* q = s + 32 + 32 * n;
      for (int j = 0; j < 4; ++j) {
        const uint8_t bit = static_cast<uint8_t>(1u << (4 * n + j));
        for (int g = 0; g < 2; ++g) {
          const float dl = d * static_cast<float>(scales[8 * n + 2 * j + g]);
          for (int l = 0; l < 16; ++l) {
            const int q3 = ((q[16 * g + l] >> (2 * j)) & 3) - ((hm[16 * g + l] & bit) ? 0 : 4);
            *out++ = dl * static_cast<float>(q3);
          }
        }
      }
    }
  }
}

// Q4_K (High = false) and Q5_K (true): four chunks of 64, each the low then the high nibbles of
// 32 bytes, one 6-bit scale and min per 32. y: [n_blocks * 256]
template <bool High>
void row_q45_k_portable(const uint8_t* s, float* y, int64_t n_blocks) {
  constexpr int kBytes = High ? 176 : 144;
  for (int64_t b = 0; b < n_blocks; ++b, s += kBytes, y += 256) {
    const float d = half_at(s), dmin = half_at(s + 2);
    const uint8_t* p = s + 4;  // 12 bytes of packed scales and mins
    const uint8_t* qh = s + 16;
    const uint8_t* qs = s + (High ? 48 : 16);
    for (int c = 0; c < 4; ++c) {
      for (int h = 0; h < 2; ++h) {
        const int i = 2 * c + h;
        const int sc = i < 4 ? p[i] & 63 : (p[i + 4] & 15) | ((p[i - 4] >> 6) << 4);
        const int m = i < 4 ? p[i + 4] & 63 : (p[i + 4] >> 4) | ((p[i] >> 6) << 4);
        const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
        float* out = y + 64 * c + 32 * h;
        for (int l = 0; l < 32; ++l) {
          int q = (qs[32 * c + l] >> (4 * h)) & 15;
          if constexpr (High) q |= ((qh[l] >> i) & 1) << 4;
          out[l] = dl * static_cast<float>(q) - ml;
        }
      }
    }
  }
}

#if FASA_AVX512
// GCC 12.2's AVX-512 intrinsics build "undefined" vectors by self-initialization, which trips
// -W(maybe-)uninitialized at every inlined use (GCC bug 105593, fixed in 12.3): silence it here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// ---- AVX-512 per-type rows --------------------------------------------------------------------

inline __m512i load_u8x16(const uint8_t* p) {  // 16 bytes -> 16 x i32 (zero-extended)
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

void row_f16_avx512(const uint8_t* s, float* y, int64_t n) {  // y: [n]
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 2 * i));
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(h));
  }
  row_f16_portable(s + 2 * i, y + i, n - i);
}

void row_bf16_avx512(const uint8_t* s, float* y, int64_t n) {  // y: [n]
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 2 * i));
    const __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
    _mm512_storeu_ps(y + i, _mm512_castsi512_ps(u));
  }
  row_bf16_portable(s + 2 * i, y + i, n - i);
}

// d * q (Q4_0, Q5_0: a plain product, so -0 stays -0) or d * q + m (Q4_1, Q5_1). d * q is exact,
// so the FMA rounds exactly like the reference's separate multiply and add.
template <bool has_min>
inline __m512 scale_q(__m512 d, __m512i q, __m512 m) {
  if constexpr (has_min) {
    return _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(q), m);
  } else {
    return _mm512_mul_ps(d, _mm512_cvtepi32_ps(q));
  }
}

template <bool has_min>
void row_q4_avx512(const uint8_t* s, float* y, int64_t n_blocks) {
  // y: [n_blocks * 32]; Q4_0 (q - 8) * d or Q4_1 q * d + m.
  constexpr int64_t block_bytes = has_min ? 20 : 18;
  const __m512i low4 = _mm512_set1_epi32(0x0f);
  const __m512i offset = _mm512_set1_epi32(has_min ? 0 : 8);
  for (int64_t b = 0; b < n_blocks; ++b, s += block_bytes, y += 32) {
    const __m512 d = _mm512_set1_ps(half_at(s));
    const __m512 m = _mm512_set1_ps(has_min ? half_at(s + 2) : 0.0f);
    const __m512i bytes = load_u8x16(s + (has_min ? 4 : 2));
    const __m512i q0 = _mm512_sub_epi32(_mm512_and_si512(bytes, low4), offset);
    const __m512i q1 = _mm512_sub_epi32(_mm512_srli_epi32(bytes, 4), offset);
    _mm512_storeu_ps(y, scale_q<has_min>(d, q0, m));
    _mm512_storeu_ps(y + 16, scale_q<has_min>(d, q1, m));
  }
}

template <bool has_min>
void row_q5_avx512(const uint8_t* s, float* y, int64_t n_blocks) {
  // y: [n_blocks * 32]; Q5_0 (q - 16) * d or Q5_1 q * d + m.
  constexpr int64_t block_bytes = has_min ? 24 : 22;
  const __m512i low4 = _mm512_set1_epi32(0x0f);
  const __m512i bit4 = _mm512_set1_epi32(0x10);
  const __m512i offset = _mm512_set1_epi32(has_min ? 0 : 16);
  for (int64_t b = 0; b < n_blocks; ++b, s += block_bytes, y += 32) {
    const __m512 d = _mm512_set1_ps(half_at(s));
    const __m512 m = _mm512_set1_ps(has_min ? half_at(s + 2) : 0.0f);
    const uint32_t qh = load_u32(s + (has_min ? 4 : 2));
    const __m512i bytes = load_u8x16(s + (has_min ? 8 : 6));
    __m512i q0 = _mm512_and_si512(bytes, low4);
    __m512i q1 = _mm512_srli_epi32(bytes, 4);
    q0 = _mm512_mask_or_epi32(q0, static_cast<__mmask16>(qh & 0xffffu), q0, bit4);
    q1 = _mm512_mask_or_epi32(q1, static_cast<__mmask16>(qh >> 16), q1, bit4);
    q0 = _mm512_sub_epi32(q0, offset);
    q1 = _mm512_sub_epi32(q1, offset);
    _mm512_storeu_ps(y, scale_q<has_min>(d, q0, m));
    _mm512_storeu_ps(y + 16, scale_q<has_min>(d, q1, m));
  }
}

void row_q8_0_avx512(const uint8_t* s, float* y, int64_t n_blocks) {  // y: [n_blocks * 32]
  for (int64_t b = 0; b < n_blocks; ++b, s += 34, y += 32) {
    const __m512 d = _mm512_set1_ps(half_at(s));
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 18));
    _mm512_storeu_ps(y, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo))));
    _mm512_storeu_ps(y + 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi))));
  }
}

void row_q6_k_avx512(const uint8_t* s, float* y, int64_t n_blocks) {  // y: [n_blocks * 256]
  const __m512i low4 = _mm512_set1_epi32(0x0f);
  const __m512i low2 = _mm512_set1_epi32(3);
  const __m512i bias = _mm512_set1_epi32(32);
  auto emit = [&](float* out, __m512i q, float dl) {  // out: [16]
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_set1_ps(dl),
                                        _mm512_cvtepi32_ps(_mm512_sub_epi32(q, bias))));
  };
  for (int64_t b = 0; b < n_blocks; ++b, s += 210, y += 256) {
    const int8_t* scales = reinterpret_cast<const int8_t*>(s + 192);
    const float d = half_at(s + 208);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = s + 64 * half;
      const uint8_t* qh = s + 128 + 32 * half;
      float* hy = y + 128 * half;
      const int8_t* sc = scales + 8 * half;
      for (int c = 0; c < 2; ++c) {
        const int l = 16 * c;
        const __m512i a = load_u8x16(ql + l);
        const __m512i bq = load_u8x16(ql + l + 32);
        const __m512i h = load_u8x16(qh + l);
        const __m512i h1 = _mm512_slli_epi32(_mm512_and_si512(h, low2), 4);
        const __m512i h2 = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 2), low2), 4);
        const __m512i h3 = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 4), low2), 4);
        const __m512i h4 = _mm512_slli_epi32(_mm512_srli_epi32(h, 6), 4);
        emit(hy + l, _mm512_or_si512(_mm512_and_si512(a, low4), h1),
             d * static_cast<float>(sc[c + 0]));
        emit(hy + l + 32, _mm512_or_si512(_mm512_and_si512(bq, low4), h2),
             d * static_cast<float>(sc[c + 2]));
        emit(hy + l + 64, _mm512_or_si512(_mm512_srli_epi32(a, 4), h3),
             d * static_cast<float>(sc[c + 4]));
        emit(hy + l + 96, _mm512_or_si512(_mm512_srli_epi32(bq, 4), h4),
             d * static_cast<float>(sc[c + 6]));
      }
    }
  }
}
#pragma GCC diagnostic pop
#endif  // FASA_AVX512

}  // namespace

namespace detail {

void dequantize_row_portable(DType type, const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint8_t*>(src);
  switch (type) {
    case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::F16: row_f16_portable(s, dst, n); return;
    case DType::BF16: row_bf16_portable(s, dst, n); return;
    case DType::Q4_0: row_q4_0_portable(s, dst, n / 32); return;
    case DType::Q4_1: row_q4_1_portable(s, dst, n / 32); return;
    case DType::Q5_0: row_q5_portable<false>(s, dst, n / 32); return;
    case DType::Q5_1: row_q5_portable<true>(s, dst, n / 32); return;
    case DType::Q8_0: row_q8_0_portable(s, dst, n / 32); return;
    case DType::Q6_K: row_q6_k_portable(s, dst, n / 256); return;
    case DType::Q2_K: row_q2_k_portable(s, dst, n / 256); return;
    case DType::Q3_K: row_q3_k_portable(s, dst, n / 256); return;
    case DType::Q4_K: row_q45_k_portable<false>(s, dst, n / 256); return;
    case DType::Q5_K: row_q45_k_portable<true>(s, dst, n / 256); return;
    default:
      // Unsupported types are rejected at load time (dtype_info().supported).
      FASA_CHECK(!"dequantize_row: unsupported type");
      return;
  }
}

}  // namespace detail

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
#if FASA_AVX512
  const auto* s = static_cast<const uint8_t*>(src);
  switch (type) {
    case DType::F16: row_f16_avx512(s, dst, n); return;
    case DType::BF16: row_bf16_avx512(s, dst, n); return;
    case DType::Q4_0: row_q4_avx512<false>(s, dst, n / 32); return;
    case DType::Q4_1: row_q4_avx512<true>(s, dst, n / 32); return;
    case DType::Q5_0: row_q5_avx512<false>(s, dst, n / 32); return;
    case DType::Q5_1: row_q5_avx512<true>(s, dst, n / 32); return;
    case DType::Q8_0: row_q8_0_avx512(s, dst, n / 32); return;
    case DType::Q6_K: row_q6_k_avx512(s, dst, n / 256); return;
    default: break;
  }
#endif
  detail::dequantize_row_portable(type, src, dst, n);
}

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
