// IEEE fp16 and bfloat16 conversions, scalar and exact (no lookup tables, no intrinsics).
//
// fp16 -> fp32 is exact for every finite value and infinity. A NaN keeps its sign and payload and
// comes back quiet (the quiet bit is set), which is what the hardware conversion (vcvtph2ps) does,
// so the scalar and SIMD dequantization paths give the same bits for every input.
#include "fasa/core/f16.h"

namespace fasa {

namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Shifts `m` right by `shift` (1..31), rounding to nearest, ties to even.
uint32_t shift_round_even(uint32_t m, int shift) {
  const uint32_t kept = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  return kept + ((rem > half || (rem == half && (kept & 1u))) ? 1u : 0u);
}

}  // namespace

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in fp32.
    const float mag = static_cast<float>(mant) * 0x1p-24f;
    return bits_float(float_bits(mag) | sign);
  }
  if (exp == 31) {
    if (mant == 0) return bits_float(sign | 0x7f800000u);  // +-inf
    return bits_float(sign | 0x7fc00000u | (mant << 13));  // NaN, quiet, payload kept
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));  // rebias 15 -> 127
}

uint16_t fp32_to_fp16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) {
    // NaN: keep the top payload bits and force the quiet bit so it cannot become inf.
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) {
    // >= 65520 (halfway between 65504 and 2^16) rounds to inf; inf stays inf.
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (abs >= 0x38800000u) {
    // Normal fp16 range (>= 2^-14): rebias the exponent, round the mantissa from 23 to 10 bits.
    // A carry out of the mantissa correctly bumps the exponent.
    const uint32_t rebased = abs - (112u << 23);
    return static_cast<uint16_t>(sign | shift_round_even(rebased, 13));
  }
  if (abs <= 0x33000000u) {
    // <= 2^-25 (half of the smallest subnormal) rounds to zero (a tie goes to the even 0).
    return sign;
  }
  // Subnormal fp16: value * 2^24 rounded to an integer. value = m * 2^(e - 150) with the implicit
  // bit in m, so value * 2^24 = m >> (126 - e); here 102 <= e <= 112, shift in [14, 24].
  const uint32_t e = abs >> 23;
  const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
  return static_cast<uint16_t>(sign | shift_round_even(m, static_cast<int>(126u - e)));
}

uint16_t fp32_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN: keep sign and top payload, quiet
  }
  // Round to nearest even on the low 16 bits; overflow carries into inf as it should.
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

}  // namespace fasa
