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
// (waking up, waiting at barriers and at the end for the slowest worker, and, in a team, the
// other workers' time while worker 0 runs team_single alone).
struct ParallelStats {
  uint64_t dispatches = 0;  // parallel regions: pool wake-ups (a team is one)
  uint64_t barriers = 0;    // points where workers wait for each other: a region's end, and
                            // a team's parallel steps and team_single sections
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
// In a team's collective code (parallel_team) every worker must make the same calls: each runs
// its own range and waits at the team barrier, so the partition (and every result) is the same
// as from a region of its own.
template <typename Fn>
void parallel_ranges(int64_t n, Fn&& fn) {
  if (n <= 0) return;
  int nt = detail::range_width();
  if (nt > n) nt = static_cast<int>(n);
  if (nt <= 1 && !detail::ranges_are_collective()) {
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

// Team regions: one dispatch for a stretch of work with several parallel steps (a whole decode
// step of the model), instead of a region per step. fn() runs on every worker at once (SPMD):
// its code is "collective", every worker runs all of it, parallel_ranges inside it splits the
// range over the team and ends in a barrier, and writes to shared memory outside a range's own
// part belong in team_single. team_worker() / team_size() name this worker and the team (for
// per-worker buffers, sized for num_threads() beforehand). Where no region can open (one thread,
// another thread's region runs, or inside a region) fn() runs once on the caller as a team of
// one. Collective code outside parallel steps must not throw (the process stops if it does);
// errors from parallel steps and team_single reach the caller of parallel_team.
template <typename Fn>
void parallel_team(Fn&& fn) {
  detail::run_team([](void* p) { (*static_cast<std::remove_reference_t<Fn>*>(p))(); }, &fn);
}

// Inside a team's collective code: worker 0 runs fn() while the others wait, and hand off any
// parallel_ranges it calls to them; every worker continues once fn() has returned (a barrier).
// Anywhere else: fn().
template <typename Fn>
void team_single(Fn&& fn) {
  if (!detail::ranges_are_collective()) {
    fn();
    return;
  }
  detail::team_single([](void* p) { (*static_cast<std::remove_reference_t<Fn>*>(p))(); }, &fn);
}

inline int team_worker() { return detail::team_worker(); }
inline int team_size() { return detail::team_size(); }

// Calls fn(i) for i in [0, n). Each i runs exactly once; no nested parallelism.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn) {
  parallel_ranges(n, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

}  // namespace fasa
