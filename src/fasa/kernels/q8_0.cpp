#include "fasa/kernels/q8_0.h"

#include <cmath>

#include "fasa/core/f16.h"

namespace fasa {

uint16_t q8_quantize(const float* x, int n, int8_t* q, size_t q_stride) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < n; ++i) q[i * q_stride] = static_cast<int8_t>(std::roundf(x[i] * id));
  return fp32_to_fp16(d);
}

void quantize_row_q8_0(const float* x, int n, uint8_t* dst) {
  for (int b = 0; b < n / kQ8Block; ++b) {
    uint8_t* p = dst + static_cast<size_t>(b) * kQ8BlockBytes;
    const uint16_t d = q8_quantize(x + b * kQ8Block, kQ8Block, reinterpret_cast<int8_t*>(p + 2));
    p[0] = static_cast<uint8_t>(d & 0xff);
    p[1] = static_cast<uint8_t>(d >> 8);
  }
}

void dequantize_row_q8_0(const uint8_t* src, int n, float* out) {
  for (int b = 0; b < n / kQ8Block; ++b) {
    const float d = fp16_to_fp32(q8_0_block_d(src, b));
    const int8_t* qs = q8_0_block_qs(src, b);
    for (int i = 0; i < kQ8Block; ++i) out[b * kQ8Block + i] = d * static_cast<float>(qs[i]);
  }
}

float q8_0_value(const uint8_t* row, int i) {
  const int b = i / kQ8Block;
  return fp16_to_fp32(q8_0_block_d(row, b)) *
         static_cast<float>(q8_0_block_qs(row, b)[i % kQ8Block]);
}

}  // namespace fasa
