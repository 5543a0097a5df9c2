// The read-bandwidth probe (its buffer size, threads and GB/s arithmetic; sizes too small to
// escape the caches refused with a clear error) and the roofline formula against numbers worked
// out by hand.
#include <gtest/gtest.h>

#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/eval/roofline.h"
#include "fasa/kernels/bandwidth.h"

namespace fasa {
namespace {

TEST(BandwidthTest, BufferRoundedToPagesWithOneAndTwoThreads) {
  for (const int nt : {1, 2}) {
    set_num_threads(nt);
    // 5000 bytes over the minimum: one whole 4 KiB page of them is read.
    const BandwidthResult r = measure_read_bandwidth(kMinBandwidthBytes + 5000, 2);
    EXPECT_EQ(r.threads, nt);
    EXPECT_EQ(r.bytes, kMinBandwidthBytes + 4096);
    ASSERT_GT(r.seconds, 0.0);
    EXPECT_DOUBLE_EQ(r.read_gb_s, static_cast<double>(r.bytes) / r.seconds / 1e9);
  }
  set_num_threads(0);
}

TEST(BandwidthTest, RejectsBadSizes) {
  EXPECT_THROW(measure_read_bandwidth(1000), Error);
  EXPECT_THROW(measure_read_bandwidth(kMinBandwidthBytes - 1), Error);
  EXPECT_THROW(measure_read_bandwidth(kMinBandwidthBytes, 0), Error);
  try {
    measure_read_bandwidth(1 << 20);
    FAIL() << "1 MiB accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too small"), std::string::npos) << e.what();
  }
}

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
