// The sweep's 95 % confidence intervals against numbers worked out by hand.
#include "fasa/eval/confidence.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fasa {
namespace {

TEST(Confidence, OneKindIsTheNormalIntervalOfTheMean) {
  // Scores 0, 1, 1, 0, 1: mean 0.6, sample variance (3 * 0.16 + 2 * 0.36) / 4 = 0.3.
  EXPECT_NEAR(ci95_half_width({{0, 1, 1, 0, 1}}), 1.96 * std::sqrt(0.3 / 5), 1e-12);
  // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squares summed 32, sample variance 32 / 7.
  EXPECT_NEAR(ci95_half_width({{2, 4, 4, 4, 5, 5, 7, 9}}), 1.96 * std::sqrt(32.0 / 7 / 8), 1e-12);
  EXPECT_EQ(ci95_half_width({{1, 1, 1}}), 0.0);  // no spread
  EXPECT_EQ(ci95_half_width({{0.5}}), 0.0);      // one task: no variance to estimate
  EXPECT_EQ(ci95_half_width({}), 0.0);
}

TEST(Confidence, KindsAreStrata) {
  // Kind a: 0, 1 (variance 0.5, n 2); kind b: 1, 1, 0, 0 (variance 1/3, n 4). The score is the
  // mean of the two kind means: Var = (0.5 / 2 + (1/3) / 4) / 2^2 = (0.25 + 1/12) / 4 = 1/12.
  EXPECT_NEAR(ci95_half_width({{0, 1}, {1, 1, 0, 0}}), 1.96 * std::sqrt(1.0 / 12), 1e-12);
  // An empty kind is skipped; a kind of one task counts as a kind with no variance.
  EXPECT_NEAR(ci95_half_width({{0, 1}, {}, {1}}), 1.96 * std::sqrt(0.25 / 4), 1e-12);
}

}  // namespace
}  // namespace fasa
