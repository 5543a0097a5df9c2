// Small helpers every kernel file shares, compiled once per instruction set with the including
// file. Not a normal header: include it inside an instruction-set region (core/isa_begin.h), in
// the file's anonymous namespace, after <cstring>, core/f16.h and core/isa_intrin.h.

// fp16 -> fp32: the hardware conversion where the set has it (F16C), else fp16_to_fp32; the
// same bits either way (NaN quieted).
inline float half_to_float(uint16_t h) {
#if FASA_AVX2
  return _cvtsh_ss(h);
#else
  return fp16_to_fp32(h);
#endif
}

// The fp16 value stored (unaligned) at p.
inline float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return half_to_float(h);
}

#if FASA_AVX2
// Sum of 8 floats in the fixed tree: (0+4, 1+5, 2+6, 3+7), then (0+2, 1+3), then 0+1 — the last
// three levels of the 16-lane tree (v = lanes 0-7 + lanes 8-15).
inline float hsum8_simd(__m256 v) {
  __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}
#endif

#if FASA_AVX512
// 4 activation bytes (q[0..3]) in every 32-bit lane: the shared operand of a 16-row kernel.
inline __m512i bcast4(const int8_t* q) {
  int32_t v;
  std::memcpy(&v, q, 4);
  return _mm512_set1_epi32(v);
}
#endif
