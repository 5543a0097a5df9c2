// Internal to core/thread_pool.cpp and core/team.cpp: how a thread waits for another (spin
// briefly, then sleep on a futex), the time it spent waiting, and the parallel mode it is in.
#pragma once

#include <atomic>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FASA_CPU_RELAX() _mm_pause()
#else
#define FASA_CPU_RELAX() ((void)0)
#endif

namespace fasa::detail {

// What parallel_ranges does on this thread (parallel.h).
enum class RangeMode {
  kTop,       // outside any region: open one on the pool
  kSerial,    // inside a region's work (or a team of one): run the whole range here
  kTeamAll,   // in a team's collective code: run this worker's share, then the team barrier
  kTeamLead,  // worker 0 inside team_single: hand the range to the other workers, who wait
};

inline thread_local RangeMode tl_mode = RangeMode::kTop;
// Seconds this thread spent waiting inside regions (barriers, a team leader's hand-offs); the
// pool subtracts it from a worker's time in the region to count the worker's busy time.
inline thread_local double tl_wait_s = 0.0;

// Spin this many checks before sleeping: a pause is ~40 ns on recent x86, so ~100 us of spinning,
// longer than the serial stretches between the regions of a forward pass.
constexpr int kSpinChecks = 2500;

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Spins until pred() or kSpinChecks, then returns pred().
template <typename Pred>
bool spin_until(Pred pred) {
  for (int i = 0; i < kSpinChecks; ++i) {
    if (pred()) return true;
    FASA_CPU_RELAX();
  }
  return pred();
}

// Waits until done(a's value): spins, then sleeps in a.wait. Pairs with a notifier that changes a
// (seq_cst) and then notifies if `sleepers` > 0: a sleeper announces itself before it re-checks,
// so either it sees the new value or the notifier sees it. Adds the time to tl_wait_s.
template <typename T, typename Done>
void wait_for(std::atomic<T>& a, std::atomic<int>& sleepers, Done done) {
  const double t0 = now_s();
  if (!spin_until([&] { return done(a.load(std::memory_order_acquire)); })) {
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    for (T v = a.load(std::memory_order_seq_cst); !done(v); v = a.load(std::memory_order_seq_cst)) {
      a.wait(v, std::memory_order_seq_cst);
    }
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
  tl_wait_s += now_s() - t0;
}

// Wakes the sleepers of wait_for after a's value has changed.
template <typename T>
void notify_changed(std::atomic<T>& a, std::atomic<int>& sleepers) {
  if (sleepers.load(std::memory_order_seq_cst) > 0) a.notify_all();
}

}  // namespace fasa::detail
