// K-quant block unpacking shared by the integer K-quant kernels (matmul_q8k.isa.cpp,
// matmul_amx.isa.cpp). Not a normal header: include it inside an instruction-set region
// (core/isa_begin.h), in an anonymous namespace, after <cstring>, f16.h, kernels/repack.h, isa_intrin.h and
// kernels/simd_common.inc.h; it is compiled once per set with the including file.
//
// UnpackedBlock: one 256-element block as integers (the weight model of matmul_q8k.h): codes u
// in element order, per group of 16 elements the integer scale s and coefficient c, fp32 d and
// dmin.
struct alignas(64) UnpackedBlock {
  uint8_t u[256];  // codes, element order
  int16_t s[16];   // scale of each group of 16 elements
  int16_t c[16];   // coefficient of each group (matmul_q8k.h)
  float d, dmin;
};

inline int block_bytes(DType t) {
  switch (t) {
    case DType::Q2_K: return 84;
    case DType::Q3_K: return 110;
    case DType::Q4_K: return 144;
    case DType::Q5_K: return 176;
    case DType::Q6_K: return 210;
    case DType::Q4_K_R16: return 148;  // per row: a group block holds 16 rows (repack.h)
    case DType::Q6_K_R16: return 210;
    default: return 0;
  }
}

inline bool has_min(DType t) {
  return t == DType::Q2_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q4_K_R16;
}

// Row `row`'s block b of a matrix of type t (GGUF rows, or a repacked layout rebuilt into tmp:
// [210] bytes). row_bytes: bytes per row (nb * block_bytes(t)).
inline const uint8_t* gguf_block(DType t, const uint8_t* w, int64_t row_bytes, int64_t row,
                                 int64_t b, uint8_t* tmp) {
  if (!is_repacked(t)) return w + row * row_bytes + b * block_bytes(t);
  gguf_block_of(t, w, row_bytes / block_bytes(t), row, b, tmp);
  return tmp;
}

inline uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

#if FASA_AVX2
inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline void store256(void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
inline __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
#endif

// ---- unpacking (block layouts: tests/support/ref/dequant_ref.cpp) -----------------------------------
// Each function fills one part of an UnpackedBlock; the same integers whether kSimd (AVX2, where
// this set has it) or not. The AVX2 branches build their vectors in registers: bytes stored one
// way and loaded another would stall on store forwarding.

#if FASA_AVX2
// Per byte: (v >> n) & mask (a 16-bit shift; the mask drops the bits shifted in from the
// neighbouring byte as long as mask < 2^(8 - n)).
inline __m256i bits(__m256i v, int n, int mask) {
  return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(n)),
                          _mm256_set1_epi8(static_cast<char>(mask)));
}
inline __m256i negate16(__m256i v) { return _mm256_sub_epi16(_mm256_setzero_si256(), v); }
#endif

// Q2_K (84 B: sc[16] qs[64] d dmin), Q3_K (110 B: hmask[32] qs[64] sc[12] d): element
// k = 128 n + 32 j + i (i < 32) has the 2-bit code (qs[32 n + i] >> 2 j) & 3; Q3_K adds 4 when
// bit 4 n + j of hmask[i] is set.
template <bool kSimd, bool kHigh>
void codes_q23_k(const uint8_t* qs, const uint8_t* hm, uint8_t* u) {
#if FASA_AVX2
  if constexpr (kSimd) {
    const __m256i h = kHigh ? load256(hm) : _mm256_setzero_si256();
    for (int n = 0; n < 2; ++n) {
      const __m256i q = load256(qs + 32 * n);
      for (int j = 0; j < 4; ++j) {
        __m256i v = bits(q, 2 * j, 3);
        if constexpr (kHigh) v = _mm256_or_si256(v, _mm256_slli_epi16(bits(h, 4 * n + j, 1), 2));
        store256(u + 128 * n + 32 * j, v);
      }
    }
    return;
  }
#endif
  for (int n = 0; n < 2; ++n) {
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 32; ++i) {
        int v = (qs[32 * n + i] >> (2 * j)) & 3;
        if constexpr (kHigh) v |= ((hm[i] >> (4 * n + j)) & 1) << 2;
        u[128 * n + 32 * j + i] = static_cast<uint8_t>(v);
      }
    }
  }
}

template <bool kSimd>
void scales_q2_k(const uint8_t* b, UnpackedBlock& k) {  // s = sc & 15, c = -(sc >> 4)
  k.d = half_at(b + 80);
  k.dmin = half_at(b + 82);
#if FASA_AVX2
  if constexpr (kSimd) {
    const __m256i v = _mm256_cvtepu8_epi16(load128(b));
    store256(k.s, _mm256_and_si256(v, _mm256_set1_epi16(15)));
    store256(k.c, negate16(_mm256_srli_epi16(v, 4)));
    return;
  }
#endif
  for (int g = 0; g < 16; ++g) {
    k.s[g] = static_cast<int16_t>(b[g] & 15);
    k.c[g] = static_cast<int16_t>(-(b[g] >> 4));
  }
}

template <bool kSimd>
void scales_q3_k(const uint8_t* b, UnpackedBlock& k) {
  // Scale g: low 4 bits from nibble g / 8 of byte g % 8, high 2 bits from bits 2 (g / 4) of
  // byte 8 + g % 4; minus 32. Four groups per 32-bit word, little-endian. c = -4 s.
  k.d = half_at(b + 108);
  k.dmin = 0.0f;
  const uint32_t a = u32_at(b + 96), c = u32_at(b + 100), h = u32_at(b + 104);
  constexpr uint32_t m4 = 0x0f0f0f0f, m2 = 0x03030303;
  const uint32_t w[4] = {(a & m4) | ((h & m2) << 4), (c & m4) | (((h >> 2) & m2) << 4),
                         ((a >> 4) & m4) | (((h >> 4) & m2) << 4),
                         ((c >> 4) & m4) | (((h >> 6) & m2) << 4)};
#if FASA_AVX2
  if constexpr (kSimd) {
    const __m128i u8 = _mm_set_epi32(static_cast<int>(w[3]), static_cast<int>(w[2]),
                                     static_cast<int>(w[1]), static_cast<int>(w[0]));
    const __m256i sv = _mm256_sub_epi16(_mm256_cvtepu8_epi16(u8), _mm256_set1_epi16(32));
    store256(k.s, sv);
    store256(k.c, negate16(_mm256_slli_epi16(sv, 2)));
    return;
  }
#endif
  for (int g = 0; g < 16; ++g) {
    const int sv = static_cast<int>((w[g / 4] >> (8 * (g % 4))) & 0xff) - 32;
    k.s[g] = static_cast<int16_t>(sv);
    k.c[g] = static_cast<int16_t>(-4 * sv);
  }
}

// Q4_K (144 B: d dmin sc[12] qs[128]), Q5_K (176 B: d dmin sc[12] qh[32] qs[128]): element
// k = 64 c + 32 h + l has nibble h of qs[32 c + l]; Q5_K adds 16 * bit (2 c + h) of qh[l].
template <bool kSimd, bool kHigh>
void codes_q45_k(const uint8_t* qs, const uint8_t* qh, uint8_t* u) {
#if FASA_AVX2
  if constexpr (kSimd) {
    const __m256i h = kHigh ? load256(qh) : _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load256(qs + 32 * c);
      __m256i lo = bits(q, 0, 15), hi = bits(q, 4, 15);
      if constexpr (kHigh) {
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(bits(h, 2 * c, 1), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(bits(h, 2 * c + 1, 1), 4));
      }
      store256(u + 64 * c, lo);
      store256(u + 64 * c + 32, hi);
    }
    return;
  }
#endif
  for (int c = 0; c < 4; ++c) {
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        int v = (qs[32 * c + l] >> (4 * h)) & 15;
        if constexpr (kHigh) v |= ((qh[l] >> (2 * c + h)) & 1) << 4;
        u[64 * c + 32 * h + l] = static_cast<uint8_t>(v);
      }
    }
  }
}

template <bool kSimd>
void scales_q45_k(const uint8_t* b, UnpackedBlock& k) {
  // Sub-block j < 4: scale p[j] & 63, min p[j + 4] & 63; j >= 4: low 4 bits from the nibbles
  // of p[j + 4], high 2 bits from the top bits of p[j - 4] (scale) and p[j] (min). Sub-block j
  // is groups 2 j and 2 j + 1; c = -min. Bytes of sc and mn: sub-blocks 0..7, little-endian.
  k.d = half_at(b);
  k.dmin = half_at(b + 2);
  const uint32_t w0 = u32_at(b + 4), w1 = u32_at(b + 8), w2 = u32_at(b + 12);
  constexpr uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
  const uint64_t sc = (w0 & m6) | uint64_t{(w2 & m4) | (((w0 >> 6) & m2) << 4)} << 32;
  const uint64_t mn = (w1 & m6) | uint64_t{((w2 >> 4) & m4) | (((w1 >> 6) & m2) << 4)} << 32;
#if FASA_AVX2
  if constexpr (kSimd) {
    const __m128i sv = _mm_cvtsi64_si128(static_cast<int64_t>(sc));
    const __m128i mv = _mm_cvtsi64_si128(static_cast<int64_t>(mn));
    store256(k.s, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(sv, sv)));
    store256(k.c, negate16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mv, mv))));
    return;
  }
#endif
  for (int g = 0; g < 16; ++g) {
    k.s[g] = static_cast<int16_t>((sc >> (8 * (g / 2))) & 0xff);
    k.c[g] = static_cast<int16_t>(-static_cast<int>((mn >> (8 * (g / 2))) & 0xff));
  }
}

// Q6_K (210 B: ql[128] qh[64] sc[16] d): in half h (elements 128 h ..; ql += 64 h, qh += 32 h),
// for l < 32 the elements l + 32 e (e < 4) take nibble e / 2 of ql[l + 32 (e % 2)] and bits
// 2 e, 2 e + 1 of qh[l] as bits 4, 5.
template <bool kSimd>
void codes_q6_k(const uint8_t* ql, const uint8_t* qh, uint8_t* u) {
#if FASA_AVX2
  if constexpr (kSimd) {
    for (int h = 0; h < 2; ++h) {
      const __m256i a = load256(ql + 64 * h), b = load256(ql + 64 * h + 32);
      const __m256i hb = load256(qh + 32 * h);
      const __m256i lo[4] = {bits(a, 0, 15), bits(b, 0, 15), bits(a, 4, 15), bits(b, 4, 15)};
      for (int e = 0; e < 4; ++e) {
        const __m256i hi = _mm256_slli_epi16(bits(hb, 2 * e, 3), 4);
        store256(u + 128 * h + 32 * e, _mm256_or_si256(lo[e], hi));
      }
    }
    return;
  }
#endif
  for (int h = 0; h < 2; ++h) {
    for (int e = 0; e < 4; ++e) {
      for (int l = 0; l < 32; ++l) {
        const int lo = (ql[64 * h + l + 32 * (e % 2)] >> (4 * (e / 2))) & 15;
        const int hi = (qh[32 * h + l] >> (2 * e)) & 3;
        u[128 * h + 32 * e + l] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }
}

template <bool kSimd>
void scales_q6_k(const uint8_t* b, UnpackedBlock& k) {  // s = sc (int8), c = -32 s
  k.d = half_at(b + 208);
  k.dmin = 0.0f;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
#if FASA_AVX2
  if constexpr (kSimd) {
    const __m256i sv = _mm256_cvtepi8_epi16(load128(sc));
    store256(k.s, sv);
    store256(k.c, negate16(_mm256_slli_epi16(sv, 5)));
    return;
  }
#endif
  for (int g = 0; g < 16; ++g) {
    k.s[g] = sc[g];
    k.c[g] = static_cast<int16_t>(-32 * sc[g]);
  }
}

template <bool kSimd>
void unpack_block(DType t, const uint8_t* b, UnpackedBlock& k) {  // b: a GGUF block
  switch (gguf_type(t)) {
    case DType::Q2_K:
      codes_q23_k<kSimd, false>(b + 16, nullptr, k.u);
      scales_q2_k<kSimd>(b, k);
      return;
    case DType::Q3_K:
      codes_q23_k<kSimd, true>(b + 32, b, k.u);
      scales_q3_k<kSimd>(b, k);
      return;
    case DType::Q4_K:
      codes_q45_k<kSimd, false>(b + 16, nullptr, k.u);
      scales_q45_k<kSimd>(b, k);
      return;
    case DType::Q5_K:
      codes_q45_k<kSimd, true>(b + 48, b + 16, k.u);
      scales_q45_k<kSimd>(b, k);
      return;
    default:  // Q6_K
      codes_q6_k<kSimd>(b, b + 128, k.u);
      scales_q6_k<kSimd>(b, k);
      return;
  }
}
