// fp16 / bf16 conversions: known values, every 16-bit pattern, and round-to-nearest-even checked
// against the neighbouring representable values (and against the CPU's F16C unit when present).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "fasa/core/f16.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace fasa {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool f16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool bf16_is_nan(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0; }

TEST(F16, KnownValues) {
  struct Case {
    uint16_t h;
    float f;
  };
  const Case cases[] = {
      {0x0000, 0.0f},
      {0x3c00, 1.0f},
      {0xc000, -2.0f},
      {0x3800, 0.5f},
      {0x7bff, 65504.0f},
      {0xfbff, -65504.0f},
      {0x0001, 0x1p-24f},
      {0x03ff, 1023 * 0x1p-24f},
      {0x0400, 0x1p-14f},
      {0x3555, 0.33325195f},
      {0x7c00, INFINITY},
      {0xfc00, -INFINITY},
      {0x3c01, 1.0f + 0x1p-10f},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(bits_of(fp16_to_fp32(c.h)), bits_of(c.f)) << std::hex << c.h;
    EXPECT_EQ(fp32_to_fp16(c.f), c.h) << c.f;
  }
  EXPECT_EQ(bits_of(fp16_to_fp32(0x8000)), 0x80000000u);  // -0 keeps its sign
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
}

TEST(F16, RoundingToFp16) {
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);  // below the halfway point
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // tie, odd 0x7bff -> inf
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7c00);     // overflow -> inf
  EXPECT_EQ(fp32_to_fp16(-1e10f), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f), 0x3c00);             // tie -> even (down)
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);         // tie -> even (up)
  EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);  // above tie -> up
  EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);                    // tie with 0 -> 0
  EXPECT_EQ(fp32_to_fp16(-0x1p-25f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(0x1.000002p-25f), 0x0001);      // just above -> 2^-24
  EXPECT_EQ(fp32_to_fp16(3 * 0x1p-25f), 0x0002);         // 1.5 ulp tie -> even 2
  EXPECT_EQ(fp32_to_fp16(0x1p-14f - 0x1p-26f), 0x0400);  // subnormal rounds to normal
  EXPECT_EQ(fp32_to_fp16(1e-30f), 0x0000);
  EXPECT_TRUE(f16_is_nan(fp32_to_fp16(NAN)));
  EXPECT_TRUE(f16_is_nan(fp32_to_fp16(float_of(0x7f800001u))));  // sNaN with low payload only
  EXPECT_TRUE(f16_is_nan(fp32_to_fp16(float_of(0xffc00000u))));
  EXPECT_EQ(fp32_to_fp16(float_of(0xffc00000u)) & 0x8000, 0x8000);  // NaN sign kept
}

TEST(F16, AllValuesRoundTrip) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float f = fp16_to_fp32(h);
    if (f16_is_nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      // Payload and sign kept, quiet bit set (as the hardware conversion does).
      ASSERT_EQ(fp32_to_fp16(f), h | 0x0200) << std::hex << h;
    } else {
      ASSERT_EQ(fp32_to_fp16(f), h) << std::hex << h;
    }
#if defined(__F16C__)
    ASSERT_EQ(bits_of(f), bits_of(_cvtsh_ss(h))) << std::hex << h;
#endif
  }
}

// fp32 -> fp16 is round-to-nearest-even: compare with the representable neighbours in double.
TEST(F16, RandomFloatsRoundToNearestEven) {
  std::mt19937 rng(7);
  for (int k = 0; k < 200000; ++k) {
    // Random magnitudes across the whole fp16 range and a bit beyond, any low bits.
    const uint32_t exp = 100 + rng() % 45;  // 2^-27 .. 2^17
    const uint32_t u = (rng() & 0x80000000u) | (exp << 23) | (rng() & 0x7fffffu);
    const float f = float_of(u);
    const uint16_t h = fp32_to_fp16(f);
#if defined(__F16C__)
    ASSERT_EQ(h, _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)) << f;
#endif
    const double a = std::fabs(static_cast<double>(f));
    const uint16_t mag = h & 0x7fff;
    ASSERT_EQ(h & 0x8000, (u >> 16) & 0x8000);
    if (mag == 0x7c00) {
      ASSERT_GE(a, 65520.0) << f;
      continue;
    }
    const double v = fp16_to_fp32(mag);
    const double up = mag == 0x7bff ? 65536.0 : fp16_to_fp32(static_cast<uint16_t>(mag + 1));
    const double down = mag == 0 ? -static_cast<double>(fp16_to_fp32(1))
                                 : fp16_to_fp32(static_cast<uint16_t>(mag - 1));
    const double err = std::fabs(a - v);
    ASSERT_LE(err, std::fabs(up - a)) << f;
    ASSERT_LE(err, std::fabs(a - down)) << f;
    if (err == std::fabs(up - a) || err == std::fabs(a - down)) {
      ASSERT_EQ(mag & 1, 0) << f;  // a tie went to the even neighbour
    }
  }
}

TEST(F16, Bf16KnownValuesAndRounding) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(fp32_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_bf16(1.0f + 0x1p-8f), 0x3f80);             // tie -> even (down)
  EXPECT_EQ(fp32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);         // tie -> even (up)
  EXPECT_EQ(fp32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // above tie -> up
  EXPECT_EQ(fp32_to_bf16(3.14159265f), 0x4049);
  EXPECT_EQ(fp32_to_bf16(float_of(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_EQ(fp32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(fp32_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(fp32_to_bf16(float_of(0x00010000u)), 0x0001);  // subnormals kept
  EXPECT_TRUE(bf16_is_nan(fp32_to_bf16(NAN)));
  EXPECT_TRUE(bf16_is_nan(fp32_to_bf16(float_of(0x7f800001u))));  // would truncate to inf
  EXPECT_TRUE(bf16_is_nan(fp32_to_bf16(float_of(0x7fffffffu))));  // would carry into sign
  EXPECT_EQ(bits_of(bf16_to_fp32(0x3f80)), bits_of(1.0f));
  EXPECT_EQ(bits_of(bf16_to_fp32(0xc049)), 0xc0490000u);
}

TEST(F16, Bf16AllValuesRoundTrip) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float f = bf16_to_fp32(h);
    ASSERT_EQ(bits_of(f), i << 16);
    if (bf16_is_nan(h)) {
      ASSERT_TRUE(bf16_is_nan(fp32_to_bf16(f))) << std::hex << h;
    } else {
      ASSERT_EQ(fp32_to_bf16(f), h) << std::hex << h;
    }
  }
}

TEST(F16, Bf16RandomFloatsRoundToNearestEven) {
  std::mt19937 rng(11);
  for (int k = 0; k < 200000; ++k) {
    const uint32_t u = rng();
    const float f = float_of(u);
    if (std::isnan(f)) continue;
    const uint16_t h = fp32_to_bf16(f);
    const uint32_t lo = u & 0xffff0000u;  // truncation toward zero
    const uint32_t rem = u & 0xffffu;
    uint32_t want = lo >> 16;
    if (rem > 0x8000u || (rem == 0x8000u && (want & 1u))) ++want;
    ASSERT_EQ(h, want) << std::hex << u;
  }
}

}  // namespace
}  // namespace fasa
