// Random quant blocks for the paper-shaped models: random codes, and scales chosen so that the
// dequantized values have mean ~0 and the asked standard deviation (the forward pass then stays
// finite through every layer). Block layouts as ggml's (kernels/dequant.h).
#include <cstring>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/synth/shaped_model.h"

namespace fasa::synth {

namespace {

// xorshift64*: fast, and good enough for weights nobody reads.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed | 1) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545f4914f6cdd1dull;
  }
  void fill(uint8_t* p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const uint64_t x = next();
      std::memcpy(p + i, &x, 8);
    }
    if (i < n) {
      const uint64_t x = next();
      std::memcpy(p + i, &x, n - i);
    }
  }
};

void put_f16(uint8_t* p, float v) {
  const uint16_t h = fp32_to_fp16(v);
  std::memcpy(p, &h, 2);
}

// Q4_K (144 bytes: d, dmin, 12 bytes of 6-bit scales and mins, 128 bytes of 4-bit codes):
// value = d * sc * q - dmin * m per 32-value sub-block. With m = sc and dmin = 7.5 d,
// value = d * sc * (q - 7.5): symmetric around 0. sc in [32, 63], q uniform in [0, 15]
// (standard deviation 4.61), so the values' deviation is d * 47.5 * 4.61 on average.
void q4_k_block(uint8_t* b, float std, Rng& rng) {
  const float d = std / (47.5f * 4.61f);
  put_f16(b, d);
  put_f16(b + 2, 7.5f * d);
  uint8_t sc[8];
  const uint64_t r = rng.next();
  for (int j = 0; j < 8; ++j) sc[j] = static_cast<uint8_t>(32 + ((r >> (6 * j)) & 31));
  uint8_t* q = b + 4;  // ggml's packing (get_scale_min_k4), with m = sc
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = q[j];
    q[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((sc[j + 4] & 15) << 4));
  }
  rng.fill(b + 16, 128);
}

// Q6_K (210 bytes: 128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8 scales, d):
// value = d * scale * (q - 32), q uniform in [0, 63] (deviation 18.5), scale in [32, 95].
void q6_k_block(uint8_t* b, float std, Rng& rng) {
  rng.fill(b, 192);
  const uint64_t r0 = rng.next(), r1 = rng.next();
  for (int j = 0; j < 16; ++j) {
    const uint64_t r = j < 8 ? r0 : r1;
    b[192 + j] = static_cast<uint8_t>(32 + ((r >> (8 * (j % 8))) & 63));
  }
  put_f16(b + 208, std / (63.5f * 18.5f));
}

// Q5_0 (22 bytes: d, 4 bytes high bits, 16 bytes low nibbles): value = d * (q - 16), q in
// [0, 31] (deviation 9.23).
void q5_0_block(uint8_t* b, float std, Rng& rng) {
  put_f16(b, std / 9.23f);
  rng.fill(b + 2, 20);
}

// Q8_0 (34 bytes: d, 32 int8): value = d * q, q uniform in [-128, 127] (deviation 73.9).
void q8_0_block(uint8_t* b, float std, Rng& rng) {
  put_f16(b, std / 73.9f);
  rng.fill(b + 2, 32);
}

// A normal-ish value (Irwin-Hall of 4 uniforms, variance 1) for the plain types.
float plain_value(float std, Rng& rng) {
  const uint64_t r = rng.next();
  float s = 0.0f;
  for (int i = 0; i < 4; ++i) s += static_cast<float>((r >> (16 * i)) & 0xffff) / 65536.0f;
  return (s - 2.0f) * 1.7320508f * std;
}

}  // namespace

void fill_random_blocks(DType type, int64_t n_blocks, float std, uint64_t seed, uint8_t* out) {
  Rng rng(seed);
  const int64_t bytes = dtype_info(type).block_bytes;
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint8_t* b = out + i * bytes;
    switch (type) {
      case DType::Q4_K: q4_k_block(b, std, rng); break;
      case DType::Q6_K: q6_k_block(b, std, rng); break;
      case DType::Q5_0: q5_0_block(b, std, rng); break;
      case DType::Q8_0: q8_0_block(b, std, rng); break;
      case DType::F32: {
        const float v = plain_value(std, rng);
        std::memcpy(b, &v, 4);
        break;
      }
      case DType::F16: put_f16(b, plain_value(std, rng)); break;
      default: fail("fill_random_blocks: type {} is not supported", dtype_name(type));
    }
  }
}

}  // namespace fasa::synth
