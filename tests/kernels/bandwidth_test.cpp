// The read-bandwidth probe (kernels/bandwidth.h): its buffer size, threads and GB/s arithmetic;
// sizes too small to escape the caches refused with a clear error.
#include <gtest/gtest.h>

#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
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

}  // namespace
}  // namespace fasa
