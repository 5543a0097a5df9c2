// Dequantization: ref and fast paths against goldens from gguf-py (an independent
// implementation; scripts/dev/make_dequant_goldens.py), and fast vs ref on random rows.
//
// Every supported format is dequantized exactly: each output is d * q (exact) or d * q + m (one
// rounding) or, for Q6_K, (d * scale) * q (one rounding), so all paths and gguf-py agree bit for
// bit and the comparisons below are bitwise (NaN: any NaN matches any NaN, since NaN payload
// propagation through arithmetic is not specified).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fasa/core/dtype.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul.h"
#include "support/ref/kernels_ref.h"

namespace fasa {
namespace {

struct Golden {
  DType type = DType::F32;
  int64_t block_elems = 0;
  int64_t block_bytes = 0;
  int64_t n_blocks = 0;
  std::vector<uint8_t> raw;     // [n_blocks * block_bytes]
  std::vector<float> expected;  // [n_blocks * block_elems]
};

// Reads tests/data/dequant/<name>.bin (format documented in the generating script).
Golden load_golden(const std::string& name) {
  const std::string path = std::string(FASA_TEST_DATA_DIR) + "/dequant/" + name + ".bin";
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing golden " << path
                         << " (regenerate: python3 scripts/dev/make_dequant_goldens.py)";
  char magic[4] = {};
  uint32_t header[4] = {};  // type, block_elems, block_bytes, n_blocks
  in.read(magic, 4);
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  EXPECT_EQ(std::string(magic, 4), "FQG1") << path;
  Golden g;
  g.type = static_cast<DType>(header[0]);
  g.block_elems = header[1];
  g.block_bytes = header[2];
  g.n_blocks = header[3];
  g.raw.resize(static_cast<size_t>(g.n_blocks * g.block_bytes));
  g.expected.resize(static_cast<size_t>(g.n_blocks * g.block_elems));
  in.read(reinterpret_cast<char*>(g.raw.data()), static_cast<std::streamsize>(g.raw.size()));
  in.read(reinterpret_cast<char*>(g.expected.data()),
          static_cast<std::streamsize>(g.expected.size() * 4));
  EXPECT_TRUE(in.good()) << "truncated golden " << path;
  return g;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Number of positions where got and want differ bitwise (NaN matches NaN); reports the first.
int64_t count_mismatches(const float* got, const float* want, int64_t n, const std::string& what) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool same =
        bits_of(got[i]) == bits_of(want[i]) || (std::isnan(got[i]) && std::isnan(want[i]));
    if (!same && bad++ == 0) {
      ADD_FAILURE() << what << ": first mismatch at " << i << ": got " << got[i] << " (0x"
                    << std::hex << bits_of(got[i]) << ") want " << std::dec << want[i] << " (0x"
                    << std::hex << bits_of(want[i]) << ")";
    }
  }
  return bad;
}

const char* const kGoldenTypes[] = {"F32",  "F16",  "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
                                    "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"};

class DequantGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(DequantGolden, AllPathsMatchGgufPy) {
  const Golden g = load_golden(GetParam());
  ASSERT_FALSE(g.expected.empty());
  const DTypeInfo& info = dtype_info(g.type);
  ASSERT_EQ(info.name, GetParam());
  ASSERT_EQ(info.block_elems, g.block_elems);
  ASSERT_EQ(info.block_bytes, g.block_bytes);
  ASSERT_TRUE(info.supported);
  const int64_t n = g.n_blocks * g.block_elems;
  std::vector<float> out(static_cast<size_t>(n));  // [n]

  ref::dequantize_row(g.type, g.raw.data(), out.data(), n);
  EXPECT_EQ(count_mismatches(out.data(), g.expected.data(), n, "ref"), 0);

  std::fill(out.begin(), out.end(), -1.0f);
  dequantize_row(g.type, g.raw.data(), out.data(), n);
  EXPECT_EQ(count_mismatches(out.data(), g.expected.data(), n, "fast"), 0);

  std::fill(out.begin(), out.end(), -1.0f);
  detail::dequantize_row_portable(g.type, g.raw.data(), out.data(), n);
  EXPECT_EQ(count_mismatches(out.data(), g.expected.data(), n, "portable"), 0);

  // Block by block (a row that is a single block) gives the same values.
  for (int64_t b = 0; b < g.n_blocks; ++b) {
    float one[256];  // [block_elems]
    dequantize_row(g.type, g.raw.data() + b * g.block_bytes, one, g.block_elems);
    EXPECT_EQ(count_mismatches(one, g.expected.data() + b * g.block_elems, g.block_elems,
                               "single block"),
              0);
  }
}

INSTANTIATE_TEST_SUITE_P(Dequant, DequantGolden, ::testing::ValuesIn(kGoldenTypes),
                         [](const auto& info) { return std::string(info.param); });

const DType kAllTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                           DType::Q4_K, DType::Q5_K, DType::Q6_K};

// Fully random bytes: scales may be inf, NaN, subnormal; f32/f16 values may be anything.
TEST(DequantFastVsRef, RandomRowsOddBlockCounts) {
  std::mt19937 rng(12345);
  for (const DType type : kAllTypes) {
    const DTypeInfo& info = dtype_info(type);
    // Plain types: element counts that leave SIMD tails; block types: odd block counts.
    const std::vector<int64_t> counts = info.block_elems == 1
                                            ? std::vector<int64_t>{1, 3, 7, 15, 16, 17, 33, 100}
                                            : std::vector<int64_t>{1, 3, 7, 33};
    for (const int64_t n_blocks : counts) {
      for (int rep = 0; rep < 8; ++rep) {
        const int64_t n = n_blocks * info.block_elems;
        const int64_t n_bytes = n_blocks * info.block_bytes;
        // One extra byte in front so odd reps read from an unaligned source.
        std::vector<uint8_t> buf(static_cast<size_t>(n_bytes + 1));
        for (auto& v : buf) v = static_cast<uint8_t>(rng());
        const uint8_t* src = buf.data() + (rep & 1);
        std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n)),
            port(static_cast<size_t>(n));  // [n] each
        ref::dequantize_row(type, src, want.data(), n);
        dequantize_row(type, src, got.data(), n);
        detail::dequantize_row_portable(type, src, port.data(), n);
        const std::string what = std::string(info.name) + " n_blocks=" + std::to_string(n_blocks);
        EXPECT_EQ(count_mismatches(got.data(), want.data(), n, what + " fast"), 0);
        EXPECT_EQ(count_mismatches(port.data(), want.data(), n, what + " portable"), 0);
      }
    }
  }
}

// The reference formulas on hand-made blocks, so a wrong golden could not hide a wrong layout.
TEST(DequantRef, HandMadeBlocks) {
  // Q8_0: d = 0.5 (0x3800), qs = -128, -1, 0, 1, 127, ...
  uint8_t q8[34] = {0x00, 0x38};
  const int8_t q8v[5] = {-128, -1, 0, 1, 127};
  std::memcpy(q8 + 2, q8v, 5);
  float y[256];
  ref::dequantize_row(DType::Q8_0, q8, y, 32);
  EXPECT_EQ(y[0], -64.0f);
  EXPECT_EQ(y[1], -0.5f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 0.5f);
  EXPECT_EQ(y[4], 63.5f);

  // Q4_1: d = 2 (0x4000), m = -1 (0xbc00); byte j = 0x(j+1)(j) -> low nibble elem j, high elem j+16
  uint8_t q41[20] = {0x00, 0x40, 0x00, 0xbc};
  for (int j = 0; j < 16; ++j) q41[4 + j] = static_cast<uint8_t>(j | (((15 - j) & 15) << 4));
  ref::dequantize_row(DType::Q4_1, q41, y, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * j - 1.0f) << j;
    EXPECT_EQ(y[j + 16], 2.0f * (15 - j) - 1.0f) << j;
  }

  // Q5_0: d = 1; qh bit i set for odd i; nibbles 0 -> q = 16 * bit - 16.
  uint8_t q50[22] = {0x00, 0x3c, 0xaa, 0xaa, 0xaa, 0xaa};
  ref::dequantize_row(DType::Q5_0, q50, y, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], (i & 1) ? 0.0f : -16.0f) << i;

  // Q6_K: d = 1, scales[k] = k + 1, all ql = 0x21 (low 1, high 2), all qh = 0b11100100
  // (element groups of 32 get high bits 0, 1, 2, 3).
  uint8_t q6[210] = {};
  std::memset(q6, 0x21, 128);
  std::memset(q6 + 128, 0xe4, 64);
  for (int k = 0; k < 16; ++k) q6[192 + k] = static_cast<uint8_t>(k + 1);
  q6[208] = 0x00;
  q6[209] = 0x3c;
  ref::dequantize_row(DType::Q6_K, q6, y, 256);
  for (int k = 0; k < 256; ++k) {
    const int group = (k % 128) / 32;         // which of q1..q4
    const int low = group < 2 ? 1 : 2;        // low nibble of ql (groups 0, 1) or high (2, 3)
    const int q = (low | (group << 4)) - 32;  // qh bits 2*group..2*group+1 equal group
    EXPECT_EQ(y[k], static_cast<float>((k / 16 + 1) * q)) << k;
  }
}

}  // namespace
}  // namespace fasa
