// The read-bandwidth probe: a plausible number on a small buffer with one and two workers, and
// sizes too small to escape the caches refused with a clear error.
#include <gtest/gtest.h>

#include "fasa/bench/bandwidth.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"

namespace fasa {
namespace {

TEST(BandwidthTest, PositiveOnSmallBufferWithOneAndTwoThreads) {
  for (const int nt : {1, 2}) {
    set_num_threads(nt);
    const BandwidthResult r = measure_read_bandwidth(kMinBandwidthBytes, 2);
    EXPECT_EQ(r.threads, nt);
    EXPECT_EQ(r.bytes, kMinBandwidthBytes);
    EXPECT_GT(r.seconds, 0.0);
    // Sane for any machine we run on: more than a floppy, less than every HBM stack together.
    EXPECT_GT(r.read_gb_s, 0.1) << nt << " threads";
    EXPECT_LT(r.read_gb_s, 10000.0) << nt << " threads";
    EXPECT_NEAR(r.read_gb_s, static_cast<double>(r.bytes) / r.seconds / 1e9, 1e-6 * r.read_gb_s);
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

}  // namespace
}  // namespace fasa
