// The bandwidth roofline (eval/roofline.h) against numbers worked out by hand.
#include <gtest/gtest.h>

#include "fasa/eval/roofline.h"

namespace fasa {
namespace {

// 100 MB of weights + 28 MB of KV per token = 128 MB per token; at 64 GB/s that is at most
// 64e9 / 128e6 = 500 tokens/s, and a measured 125 tokens/s is a quarter of it.
TEST(BandwidthTest, RooflineFormulaByHand) {
  const Roofline r = bandwidth_roofline(100'000'000, 28e6, 64.0, 125.0);
  EXPECT_DOUBLE_EQ(r.bytes_per_token, 128e6);
  EXPECT_DOUBLE_EQ(r.tokens_per_s, 500.0);
  EXPECT_DOUBLE_EQ(r.fraction, 0.25);
  // No KV read (a prompt-only row): the weights alone. 270 MB at 13.5 GB/s: 50 tokens/s.
  const Roofline w = bandwidth_roofline(270'000'000, 0.0, 13.5, 60.0);
  EXPECT_DOUBLE_EQ(w.tokens_per_s, 50.0);
  EXPECT_DOUBLE_EQ(w.fraction, 1.2);  // faster than the bound: reported as is
  // No bandwidth measured: no bound, no fraction.
  const Roofline z = bandwidth_roofline(1000, 0.0, 0.0, 10.0);
  EXPECT_EQ(z.tokens_per_s, 0.0);
  EXPECT_EQ(z.fraction, 0.0);
}

}  // namespace
}  // namespace fasa
