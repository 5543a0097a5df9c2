// Q8_0 rows for the KV cache (`--kv-type q8_0`): llama.cpp's block layout and rounding.
// A row of n values (n a multiple of 32) is n / 32 blocks of 34 bytes: the fp16 scale d, then 32
// int8 codes. Per block: amax = max |x|, d = amax / 127, id = d ? 1 / d : 0,
// q = roundf(x * id) (half away from zero), d stored as fp16; a value reads back as
// fp16_to_fp32(d) * q (exact in fp32: 11-bit by 7-bit mantissas).
// The same rule quantizes FASA's packed dominant-key slice (one scale per token and kv head over
// its dims, q8_quantize) and the decode query of the integer Q.K (attention/attend.h).
// Plain scalar code, called from every instruction set: the codes never depend on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fasa {

inline constexpr int kQ8Block = 32;       // values per block
inline constexpr int kQ8BlockBytes = 34;  // fp16 d + 32 int8

// Bytes of a Q8_0 row of n values (n a multiple of kQ8Block).
inline constexpr size_t q8_0_row_bytes(int n) {
  return static_cast<size_t>(n / kQ8Block) * kQ8BlockBytes;
}

// Quantizes x[0, n) with one scale: returns the fp16 bits of d; q[i * q_stride] = codes.
uint16_t q8_quantize(const float* x, int n, int8_t* q, size_t q_stride = 1);

// x: [n] -> dst: q8_0_row_bytes(n) bytes.
void quantize_row_q8_0(const float* x, int n, uint8_t* dst);
// src: q8_0_row_bytes(n) bytes -> out: [n]
void dequantize_row_q8_0(const uint8_t* src, int n, float* out);
// Value i of a Q8_0 row.
float q8_0_value(const uint8_t* row, int i);

// The block's scale and codes inside a row.
inline uint16_t q8_0_block_d(const uint8_t* row, int b) {
  const uint8_t* p = row + static_cast<size_t>(b) * kQ8BlockBytes;
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
inline const int8_t* q8_0_block_qs(const uint8_t* row, int b) {
  return reinterpret_cast<const int8_t*>(row + static_cast<size_t>(b) * kQ8BlockBytes + 2);
}

}  // namespace fasa
