// One way to run loops in parallel: static partitioning over OpenMP threads, so the work each
// index gets (and hence every floating-point result) does not depend on the thread count.
#pragma once

#include <cstdint>

#include <omp.h>

namespace fasa {

// Number of worker threads used by parallel_for (set once per process or per call site).
int num_threads();
void set_num_threads(int n);

// Calls fn(i) for i in [0, n). Each i runs exactly once; no nested parallelism.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn) {
  if (n <= 0) return;
  const int nt = num_threads();
  if (nt <= 1 || n == 1 || omp_in_parallel()) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

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
#pragma omp parallel num_threads(nt)
  {
    const int w = omp_get_thread_num();
    const int64_t begin = n * w / nt;
    const int64_t end = n * (w + 1) / nt;
    if (begin < end) fn(begin, end, w);
  }
}

}  // namespace fasa
