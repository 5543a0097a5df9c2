// q8_K activation quantization (the spec is in matmul_q8k.h): plain code, and AVX-512 code that
// gives the same bytes.
#include "fasa/kernels/matmul_q8k.h"

#include <algorithm>
#include <cmath>

#include "fasa/core/error.h"

#include "fasa/core/isa_intrin.h"
#include "fasa/kernels/isa_api.h"

#include "fasa/core/isa_begin.h"

namespace fasa::FASA_ISA_NS {

namespace {

// One 256-block of activations (matmul_q8k.h): q [256], bsum [16]; returns d. The AVX-512
// version finds the same first element of largest magnitude (max |x|, then its first position)
// and rounds with the same ops, so both give the same bytes.
float quantize_block_q8k(const float* x, int8_t* q, int32_t* bsum) {
#if FASA_AVX512
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  __m512 vmax = _mm512_setzero_ps();
  for (int j = 0; j < 256; j += 16) {
    vmax = _mm512_max_ps(vmax, _mm512_and_ps(_mm512_loadu_ps(x + j), abs_mask));
  }
  const float amax = _mm512_reduce_max_ps(vmax);
  float mx = 0.0f;
  if (amax != 0.0f) {
    const __m512 target = _mm512_set1_ps(amax);
    for (int j = 0; j < 256; j += 16) {
      const __mmask16 hit =
          _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_loadu_ps(x + j), abs_mask), target, _CMP_EQ_OQ);
      if (hit != 0) {
        mx = x[j + __builtin_ctz(hit)];
        break;
      }
    }
  }
  const __m512 iscale = _mm512_set1_ps(amax != 0.0f ? -128.0f / mx : 0.0f);
  const __m512 top = _mm512_set1_ps(127.0f);
  for (int g = 0; g < 16; ++g) {
    __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + 16 * g), iscale);
    v = _mm512_min_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), top);
    const __m512i qi = _mm512_cvtps_epi32(v);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 * g), _mm512_cvtepi32_epi8(qi));
    bsum[g] = _mm512_reduce_add_epi32(qi);
  }
  return mx / -128.0f;
#else
  float amax = 0.0f, mx = 0.0f;
  for (int j = 0; j < 256; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      mx = x[j];
    }
  }
  const float iscale = amax != 0.0f ? -128.0f / mx : 0.0f;
  for (int j = 0; j < 256; ++j) {
    const float v = std::nearbyint(x[j] * iscale);  // half to even (default mode)
    q[j] = static_cast<int8_t>(std::min(v, 127.0f));
  }
  for (int g = 0; g < 16; ++g) {
    int32_t sum = 0;
    for (int j = 0; j < 16; ++j) sum += q[16 * g + j];
    bsum[g] = sum;
  }
  return mx / -128.0f;
#endif
}

}  // namespace

void quantize_acts_q8k(const float* x, int64_t n_tok, int64_t n_in, Q8KActs& out) {
  FASA_CHECK(n_in % 256 == 0);
  const int64_t nb = n_in / 256;
  out.n_tok = n_tok;
  out.n_in = n_in;
  out.q.resize(static_cast<size_t>(n_tok * n_in));
  out.d.resize(static_cast<size_t>(n_tok * nb));
  out.bsum.resize(out.d.size() * 16);
  out.bsum_pairs.resize(out.d.size() * 4);
  for (int64_t i = 0; i < n_tok * nb; ++i) {
    int32_t* bsum = out.bsum.data() + i * 16;
    out.d[i] = quantize_block_q8k(x + i * 256, out.q.data() + i * 256, bsum);
    for (int p = 0; p < 4; ++p) {
      const int32_t lo = bsum[4 * p] + bsum[4 * p + 1], hi = bsum[4 * p + 2] + bsum[4 * p + 3];
      out.bsum_pairs[i * 4 + p] =
          static_cast<int32_t>(static_cast<uint16_t>(lo) | (static_cast<uint32_t>(hi) << 16));
    }
  }
}

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
