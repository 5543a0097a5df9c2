// The TIP kernel against its scalar reference, for both key types, every tail length and
// stride, and exactly on integer data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "fasa/core/f16.h"
#include "fasa/core/isa.h"
#include "fasa/kernels/tip.h"
#include "support/isa_guard.h"
#include "support/ref/kernels_ref.h"

namespace fasa {
namespace {

TEST(TipScores, MatchesTheReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  for (bool f16 : {true, false}) {
    for (int n : {0, 1, 15, 16, 17, 31, 32, 33, 100, 257}) {
      const int n_cols = 7;
      const size_t stride = n + 3;  // capacity > n
      std::vector<float> kf(n_cols * stride);
      std::vector<uint16_t> kh(n_cols * stride);
      for (size_t i = 0; i < kf.size(); ++i) {
        kh[i] = fp32_to_fp16(nd(rng));
        kf[i] = f16 ? fp16_to_fp32(kh[i]) : nd(rng);
      }
      const std::vector<TipTerm> terms = {{3, 0.5f}, {0, -1.25f}, {6, 2.0f}, {3, 0.75f}, {1, 0.1f}};
      const void* packed = f16 ? static_cast<const void*>(kh.data()) : kf.data();
      std::vector<float> got(n + 1, -7.0f), want(n);
      tip_scores(packed, f16, stride, terms.data(), static_cast<int>(terms.size()), n, got.data());
      ref::tip_scores(packed, f16, stride, terms.data(), static_cast<int>(terms.size()), n,
                      want.data());
      for (int t = 0; t < n; ++t) EXPECT_NEAR(got[t], want[t], 1e-5f * (1 + std::fabs(want[t])));
      EXPECT_EQ(got[n], -7.0f);  // nothing written past n
    }
  }
}

TEST(TipScores, ExactOnIntegers) {
  const int n = 70;
  std::vector<float> k(2 * n);
  for (int i = 0; i < 2 * n; ++i) k[i] = static_cast<float>(i % 7 - 3);
  const TipTerm terms[] = {{0, 2.0f}, {1, -3.0f}};
  std::vector<float> got(n);
  tip_scores(k.data(), false, n, terms, 2, n, got.data());
  for (int t = 0; t < n; ++t) EXPECT_EQ(got[t], 2.0f * k[t] - 3.0f * k[n + t]) << t;
}

// The low-bit slices: every set gives the reference's bits for every start block and length
// (whole blocks, a partial last block, one slot), and the scores are the dequantized codes'
// dot products.
TEST(TipScores, LowBitSlicesSameBitsOnEverySet) {
  std::mt19937 rng(17);
  const int n_blocks = 5, n_cols = 6, cap = n_blocks * kTipBlock;
  std::vector<int8_t> q8(static_cast<size_t>(n_cols) * cap);
  std::vector<uint8_t> q4(static_cast<size_t>(n_cols) * cap / 2);
  std::vector<uint16_t> scale(static_cast<size_t>(n_cols) * n_blocks);
  for (auto& x : q8) x = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  for (auto& x : q4) x = static_cast<uint8_t>(rng() % 256);
  for (auto& d : scale) d = fp32_to_fp16(0.001f * static_cast<float>(1 + rng() % 1000));
  const std::vector<TipTerm> terms = {{3, 0.7f}, {0, -1.25f}, {5, 2.0f}, {1, 0.01f}, {3, -0.3f}};
  const int nt = static_cast<int>(terms.size());
  IsaGuard guard;
  for (const auto& [b0, n] : std::vector<std::pair<int, int>>{{0, cap},
                                                              {0, 1},
                                                              {1, 31},
                                                              {1, 33},
                                                              {2, 64},
                                                              {0, 95},
                                                              {4, 32},
                                                              {3, 40},
                                                              {0, 0}}) {
    std::vector<float> want8(n), want4(n);
    ref::tip_scores_q8b(q8.data(), scale.data(), n_blocks, terms.data(), nt, b0, n, want8.data());
    ref::tip_scores_q4b(q4.data(), scale.data(), n_blocks, terms.data(), nt, b0, n, want4.data());
    for (const Isa isa : available_isas()) {
      set_active_isa(isa);
      std::vector<float> got8(n + 1, -7.0f), got4(n + 1, -7.0f);
      tip_scores_q8b(q8.data(), scale.data(), n_blocks, terms.data(), nt, b0, n, got8.data());
      tip_scores_q4b(q4.data(), scale.data(), n_blocks, terms.data(), nt, b0, n, got4.data());
      for (int t = 0; t < n; ++t) {
        EXPECT_EQ(got8[t], want8[t]) << isa_name(isa) << " q8b b0 " << b0 << " slot " << t;
        EXPECT_EQ(got4[t], want4[t]) << isa_name(isa) << " q4b b0 " << b0 << " slot " << t;
      }
      EXPECT_EQ(got8[n], -7.0f);  // nothing written past n
      EXPECT_EQ(got4[n], -7.0f);
    }
    // The math: sum over terms of coef * scale * code, in double.
    for (int r = 0; r < n; ++r) {
      const int t = b0 * kTipBlock + r;
      double s8 = 0.0, s4 = 0.0;
      for (const TipTerm& tm : terms) {
        const double d = fp16_to_fp32(scale[tm.col * n_blocks + t / kTipBlock]);
        s8 += tm.coef * d * q8[static_cast<size_t>(tm.col) * cap + t];
        s4 += tm.coef * d * q4b_code(q4.data() + static_cast<size_t>(tm.col) * cap / 2, t);
      }
      EXPECT_NEAR(want8[r], s8, 1e-4 * (1 + std::fabs(s8)));
      EXPECT_NEAR(want4[r], s4, 1e-4 * (1 + std::fabs(s4)));
    }
  }
}

// q4b_code reads the layout: slot j of a block in byte j % 16, low nibble first, minus 8.
TEST(TipScores, Q4bCodeLayout) {
  std::vector<uint8_t> col(2 * kTipBlock / 2);
  col[3] = 0x2F;   // block 0: slot 3 = 15 - 8 = 7, slot 19 = 2 - 8 = -6
  col[16] = 0x80;  // block 1: slot 32 = -8, slot 48 = 0
  EXPECT_EQ(q4b_code(col.data(), 3), 7);
  EXPECT_EQ(q4b_code(col.data(), 19), -6);
  EXPECT_EQ(q4b_code(col.data(), 32), -8);
  EXPECT_EQ(q4b_code(col.data(), 48), 0);
  EXPECT_EQ(q4b_code(col.data(), 0), -8);
}

}  // namespace
}  // namespace fasa
