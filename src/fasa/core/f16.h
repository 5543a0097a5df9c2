// Half-precision conversions (IEEE fp16 and bfloat16), scalar and exact.
#pragma once

#include <cstdint>
#include <cstring>

namespace fasa {

float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);  // round to nearest even; overflow -> inf; NaN kept

inline float bf16_to_fp32(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t fp32_to_bf16(float f);  // round to nearest even; NaN kept

}  // namespace fasa
