// A built-in memory-bandwidth probe: the roof that decoding speed runs into.
//
// Decoding one token reads every weight once plus the part of the KV cache that attention looks
// at, and writes almost nothing; on a CPU that makes it memory-bound. What bounds it is therefore
// the *sustainable read bandwidth with all worker threads*, which is what this measures: a
// STREAM-style read test that sums a buffer much larger than the caches, in parallel with the
// engine's own threading (fasa::parallel_ranges over num_threads() workers), using the widest
// vector loads the build has. Bandwidth-bound tokens/s = bandwidth / bytes read per token.
#pragma once

#include <cstdint>

#include "fasa/kernels/kernel_list.h"
namespace fasa {

struct BandwidthResult {
  double read_gb_s = 0.0;  // best repetition, in GB/s (1e9 bytes per second)
  uint64_t bytes = 0;      // bytes read per repetition (the buffer size, rounded down to 4 KiB)
  int threads = 0;         // workers that read in parallel
  double seconds = 0.0;    // time of the best repetition
};

// The smallest buffer accepted: well beyond the last-level cache of the machines we run on, so
// the probe measures DRAM and not cache.
inline constexpr uint64_t kMinBandwidthBytes = 64ull << 20;

// Allocates `bytes` (at least kMinBandwidthBytes, at most half the physical memory), touches every
// page once, then reads the whole buffer `reps` times with num_threads() workers and reports the
// best repetition. Throws fasa::Error on a bad size or when the buffer cannot be allocated.
#define FASA_BANDWIDTH_KERNELS(X) \
  X(BandwidthResult, measure_read_bandwidth, (uint64_t bytes, int reps), (bytes, reps))
FASA_BANDWIDTH_KERNELS(FASA_DECLARE_KERNEL)
// 1 GiB, 5 repetitions unless given.
inline BandwidthResult measure_read_bandwidth(uint64_t bytes = 1ull << 30) {
  return measure_read_bandwidth(bytes, 5);
}

}  // namespace fasa
