// The TIP kernel against its scalar reference, for both key types, every tail length and
// stride, and exactly on integer data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "fasa/core/f16.h"
#include "fasa/kernels/tip.h"
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

}  // namespace
}  // namespace fasa
