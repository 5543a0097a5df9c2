// Scalar reference dequantization, one block at a time, straight from the ggml block layouts.
//
// All multi-byte fields are little-endian. Layouts (bytes):
//   Q4_0 (32 elems, 18 B): f16 d | u8 qs[16]           x[j] = d * ((qs[j] & 15) - 8),
//                                                         x[j+16] = d * ((qs[j] >> 4) - 8)
//   Q4_1 (32 elems, 20 B): f16 d | f16 m | u8 qs[16]   x = d * q + m, q as in Q4_0 without -8
//   Q5_0 (32 elems, 22 B): f16 d | u32 qh | u8 qs[16]  5th bit of element i is bit i of qh;
//                                                         x = d * (q5 - 16)
//   Q5_1 (32 elems, 24 B): f16 d | f16 m | u32 qh | u8 qs[16]   x = d * q5 + m
//   Q8_0 (32 elems, 34 B): f16 d | i8 qs[32]           x[j] = d * qs[j]
//   Q6_K (256 elems, 210 B): u8 ql[128] | u8 qh[64] | i8 scales[16] | f16 d
//       two halves of 128 elements; in half h (ql += 64h, qh += 32h), for l in [0, 32):
//         q[l]      = (ql[l]      & 15) | ((qh[l] >> 0) & 3) << 4
//         q[l + 32] = (ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4
//         q[l + 64] = (ql[l]      >> 4) | ((qh[l] >> 4) & 3) << 4
//         q[l + 96] = (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4
//       element k of the block: x = (d * scales[k / 16]) * (q - 32)
//   K-quants with 16 sub-blocks of 16: element k = 128 n + 32 j + 16 s + l (n, j, s, l in
//   [0,2), [0,4), [0,2), [0,16)) has sub-block b = 8 n + 2 j + s, 2-bit code
//   (qs[32 n + 16 s + l] >> 2 j) & 3:
//   Q2_K (84 B): u8 scales[16] | u8 qs[64] | f16 d | f16 dmin
//       x = (d * (scales[b] & 15)) * q2 - dmin * (scales[b] >> 4)
//   Q3_K (110 B): u8 hmask[32] | u8 qs[64] | u8 scales[12] | f16 d
//       q3 = q2 - 4 unless bit (4 n + j) of hmask[16 s + l] is set; 6-bit scale b:
//       low 4 bits scales[b] & 15 (b < 8) or scales[b - 8] >> 4, high 2 bits
//       (scales[8 + b % 4] >> 2 (b / 4)) & 3;  x = (d * (scale - 32)) * q3
//   K-quants with 8 sub-blocks of 32: element k = 64 c + 32 h + l has sub-block b = 2 c + h
//   and 4-bit code q4 = qs[32 c + l] & 15 (h = 0) or >> 4 (h = 1); 6-bit scale sc and min m of
//   b: b < 4: sc = scales[b] & 63, m = scales[b + 4] & 63; else sc = (scales[b + 4] & 15) |
//   (scales[b - 4] >> 6) << 4, m = (scales[b + 4] >> 4) | (scales[b] >> 6) << 4:
//   Q4_K (144 B): f16 d | f16 dmin | u8 scales[12] | u8 qs[128]
//       x = (d * sc) * q4 - dmin * m
//   Q5_K (176 B): f16 d | f16 dmin | u8 scales[12] | u8 qh[32] | u8 qs[128]
//       q5 = q4 + 16 * bit b of qh[l];  x = (d * sc) * q5 - dmin * m
//
// Rounding: every product below except Q6_K's second one is exact in fp32 (an 11-bit fp16
// significand times a small integer), so x = d * q + m rounds once whether or not the compiler
// contracts it into an FMA. Q6_K's (d * scale) is exact and its product with q rounds once; the
// association order (d * scale) * q is part of the definition. In Q2_K..Q5_K every product is
// exact (at most 11 + 6 + 5 significant bits) and only the final subtraction rounds.
#include <cstring>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/kernels/dequant.h"
#include "support/ref/kernels_ref.h"

namespace fasa::ref {

namespace {

float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void block_q4_0(const uint8_t* b, float* y) {  // y: [32]
  const float d = load_f16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>((qs[j] & 0x0f) - 8);
    y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

void block_q4_1(const uint8_t* b, float* y) {  // y: [32]
  const float d = load_f16(b);
  const float m = load_f16(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(qs[j] & 0x0f) + m;
    y[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
  }
}

void block_q5_0(const uint8_t* b, float* y) {  // y: [32]
  const float d = load_f16(b);
  const uint32_t qh = load_u32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
    const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
    y[j] = d * static_cast<float>(((qs[j] & 0x0f) | h0) - 16);
    y[j + 16] = d * static_cast<float>(((qs[j] >> 4) | h1) - 16);
  }
}

void block_q5_1(const uint8_t* b, float* y) {  // y: [32]
  const float d = load_f16(b);
  const float m = load_f16(b + 2);
  const uint32_t qh = load_u32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
    const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
    y[j] = d * static_cast<float>((qs[j] & 0x0f) | h0) + m;
    y[j + 16] = d * static_cast<float>((qs[j] >> 4) | h1) + m;
  }
}

void block_q8_0(const uint8_t* b, float* y) {  // y: [32]
  const float d = load_f16(b);
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(qs[j]);
}

void block_q6_k(const uint8_t* b, float* y) {  // y: [256]
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = load_f16(b + 208);
  for (int half = 0; half < 2; ++half) {
    const uint8_t* hl = ql + 64 * half;
    const uint8_t* hh = qh + 32 * half;
    float* hy = y + 128 * half;
    int q[128];  // this half's 6-bit values, element order
    for (int l = 0; l < 32; ++l) {
      q[l] = (hl[l] & 0x0f) | (((hh[l] >> 0) & 3) << 4);
      q[l + 32] = (hl[l + 32] & 0x0f) | (((hh[l] >> 2) & 3) << 4);
      q[l + 64] = (hl[l] >> 4) | (((hh[l] >> 4) & 3) << 4);
      q[l + 96] = (hl[l + 32] >> 4) | (((hh[l] >> 6) & 3) << 4);
    }
    for (int k = 0; k < 128; ++k) {
      const float dl = d * static_cast<float>(scales[8 * half + k / 16]);
      hy[k] = dl * static_cast<float>(q[k] - 32);
    }
  }
}

// 6-bit scale and min of sub-block b (of 8) in Q4_K/Q5_K's 12 packed bytes.
void scale_min_k4(const uint8_t* q, int b, int* sc, int* m) {
  if (b < 4) {
    *sc = q[b] & 63;
    *m = q[b + 4] & 63;
  } else {
    *sc = (q[b + 4] & 15) | ((q[b - 4] >> 6) << 4);
    *m = (q[b + 4] >> 4) | ((q[b] >> 6) << 4);
  }
}

void block_q2_k(const uint8_t* b, float* y) {  // y: [256]
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = load_f16(b + 80), dmin = load_f16(b + 82);
  for (int k = 0; k < 256; ++k) {
    const int n = k / 128, j = (k % 128) / 32, s = (k % 32) / 16, l = k % 16;
    const int sb = 8 * n + 2 * j + s;
    const int q = (qs[32 * n + 16 * s + l] >> (2 * j)) & 3;
    y[k] = d * static_cast<float>(scales[sb] & 15) * static_cast<float>(q) -
           dmin * static_cast<float>(scales[sb] >> 4);
  }
}

void block_q3_k(const uint8_t* b, float* y) {  // y: [256]
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* sc = b + 96;
  const float d = load_f16(b + 108);
  for (int k = 0; k < 256; ++k) {
    const int n = k / 128, j = (k % 128) / 32, s = (k % 32) / 16, l = k % 16;
    const int sb = 8 * n + 2 * j + s;
    const int low = sb < 8 ? sc[sb] & 15 : sc[sb - 8] >> 4;
    const int high = (sc[8 + sb % 4] >> (2 * (sb / 4))) & 3;
    const int q2 = (qs[32 * n + 16 * s + l] >> (2 * j)) & 3;
    const int q3 = q2 - ((hmask[16 * s + l] >> (4 * n + j)) & 1 ? 0 : 4);
    y[k] = d * static_cast<float>((low | (high << 4)) - 32) * static_cast<float>(q3);
  }
}

// Q4_K (with_high = false) and Q5_K (true).
void block_q45_k(const uint8_t* b, float* y, bool with_high) {  // y: [256]
  const float d = load_f16(b), dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + (with_high ? 48 : 16);
  for (int k = 0; k < 256; ++k) {
    const int c = k / 64, h = (k % 64) / 32, l = k % 32;
    int sc = 0, m = 0;
    scale_min_k4(scales, 2 * c + h, &sc, &m);
    int q = h == 0 ? qs[32 * c + l] & 15 : qs[32 * c + l] >> 4;
    if (with_high) q += ((qh[l] >> (2 * c + h)) & 1) << 4;
    y[k] = d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(m);
  }
}

}  // namespace

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint8_t*>(src);
  switch (type) {
    case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, s + 2 * i, 2);
        dst[i] = fp16_to_fp32(h);
      }
      return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, s + 2 * i, 2);
        dst[i] = bf16_to_fp32(h);
      }
      return;
    case DType::Q4_0:
      for (int64_t b = 0; b < n / 32; ++b) block_q4_0(s + 18 * b, dst + 32 * b);
      return;
    case DType::Q4_1:
      for (int64_t b = 0; b < n / 32; ++b) block_q4_1(s + 20 * b, dst + 32 * b);
      return;
    case DType::Q5_0:
      for (int64_t b = 0; b < n / 32; ++b) block_q5_0(s + 22 * b, dst + 32 * b);
      return;
    case DType::Q5_1:
      for (int64_t b = 0; b < n / 32; ++b) block_q5_1(s + 24 * b, dst + 32 * b);
      return;
    case DType::Q8_0:
      for (int64_t b = 0; b < n / 32; ++b) block_q8_0(s + 34 * b, dst + 32 * b);
      return;
    case DType::Q6_K:
      for (int64_t b = 0; b < n / 256; ++b) block_q6_k(s + 210 * b, dst + 256 * b);
      return;
    case DType::Q2_K:
      for (int64_t b = 0; b < n / 256; ++b) block_q2_k(s + 84 * b, dst + 256 * b);
      return;
    case DType::Q3_K:
      for (int64_t b = 0; b < n / 256; ++b) block_q3_k(s + 110 * b, dst + 256 * b);
      return;
    case DType::Q4_K:
      for (int64_t b = 0; b < n / 256; ++b) block_q45_k(s + 144 * b, dst + 256 * b, false);
      return;
    case DType::Q5_K:
      for (int64_t b = 0; b < n / 256; ++b) block_q45_k(s + 176 * b, dst + 256 * b, true);
      return;
    default:
      // Unsupported types are rejected at load time (dtype_info().supported).
      FASA_CHECK(!"dequantize_row: unsupported type");
      return;
  }
}

}  // namespace fasa::ref
