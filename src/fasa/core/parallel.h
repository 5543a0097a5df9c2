// One way to run loops in parallel: static partitioning over the engine's thread pool
// (core/thread_pool.h), so the work each index gets (and hence every floating-point result) does
// not depend on the thread count.
#pragma once

#include <cstdint>
#include <type_traits>

#include "fasa/core/thread_pool.h"

namespace fasa {

// Number of worker threads used by parallel_for (set once per process or per call site).
// Default: the CPUs this process may run on (OMP_NUM_THREADS, if set, overrides).
int num_threads();
void set_num_threads(int n);

// Counters of the parallel regions run so far (process-wide, cumulative). A region's wait is
// what its threads spent not working inside it: threads x region wall time - summed busy time
// (waking up, and waiting at the end for the slowest worker).
struct ParallelStats {
  uint64_t dispatches = 0;  // parallel regions (each ends in a barrier)
  double wall_s = 0.0;      // summed wall time of the regions
  double thread_s = 0.0;    // summed threads x wall time
  double busy_s = 0.0;      // summed time threads spent in the work itself
  double wait_share() const { return thread_s > 0.0 ? 1.0 - busy_s / thread_s : 0.0; }
};
ParallelStats parallel_stats();
ParallelStats operator-(const ParallelStats& a, const ParallelStats& b);

// Calls fn(begin, end, worker) over contiguous ranges; worker in [0, num_threads()): worker w
// gets [n w / nt, n (w + 1) / nt). Use for kernels with per-worker scratch. No nested
// parallelism: inside a region this runs serially on the calling thread as worker 0.
template <typename Fn>
void parallel_ranges(int64_t n, Fn&& fn) {
  if (n <= 0) return;
  int nt = num_threads();
  if (nt > n) nt = static_cast<int>(n);
  if (nt <= 1 || detail::in_parallel_region()) {
    fn(int64_t{0}, n, 0);
    return;
  }
  struct Ctx {
    std::remove_reference_t<Fn>* fn;
    int64_t n;
    int nt;
  } ctx{&fn, n, nt};
  detail::run_workers(
      nt,
      [](void* p, int w) {
        const Ctx& c = *static_cast<const Ctx*>(p);
        const int64_t begin = c.n * w / c.nt;
        const int64_t end = c.n * (w + 1) / c.nt;
        if (begin < end) (*c.fn)(begin, end, w);
      },
      &ctx);
}

// Calls fn(i) for i in [0, n). Each i runs exactly once; no nested parallelism.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn) {
  parallel_ranges(n, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

}  // namespace fasa
