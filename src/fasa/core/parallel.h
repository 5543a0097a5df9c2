// One way to run loops in parallel: static partitioning over OpenMP threads, so the work each
// index gets (and hence every floating-point result) does not depend on the thread count.
#pragma once

#include <chrono>
#include <cstdint>

#include <omp.h>

namespace fasa {

// Number of worker threads used by parallel_for (set once per process or per call site).
int num_threads();
void set_num_threads(int n);

// Counters of the parallel regions run so far (process-wide, cumulative). A region's wait is
// what its threads spent not working inside it: threads x region wall time - summed busy time.
struct ParallelStats {
  uint64_t dispatches = 0;  // parallel regions (each ends in a barrier)
  double wall_s = 0.0;      // summed wall time of the regions
  double thread_s = 0.0;    // summed threads x wall time
  double busy_s = 0.0;      // summed time threads spent in the work itself
  double wait_share() const { return thread_s > 0.0 ? 1.0 - busy_s / thread_s : 0.0; }
};
ParallelStats parallel_stats();
ParallelStats operator-(const ParallelStats& a, const ParallelStats& b);

namespace detail {
void add_region(int nt, double wall_s, double busy_s);
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace detail

// Calls fn(begin, end, worker) over contiguous ranges; worker in [0, num_threads()).
// Use for kernels with per-worker scratch.
template <typename Fn>
void parallel_ranges(int64_t n, Fn&& fn) {
  if (n <= 0) return;
  int nt = num_threads();
  if (nt > n) nt = static_cast<int>(n);
  if (nt <= 1 || omp_in_parallel()) {
    fn(int64_t{0}, n, 0);
    return;
  }
  double busy = 0.0;
  const double t0 = detail::now_s();
#pragma omp parallel num_threads(nt) reduction(+ : busy)
  {
    const double b0 = detail::now_s();
    const int w = omp_get_thread_num();
    const int64_t begin = n * w / nt;
    const int64_t end = n * (w + 1) / nt;
    if (begin < end) fn(begin, end, w);
    busy += detail::now_s() - b0;
  }
  detail::add_region(nt, detail::now_s() - t0, busy);
}

// Calls fn(i) for i in [0, n). Each i runs exactly once; no nested parallelism.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn) {
  parallel_ranges(n, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

}  // namespace fasa
