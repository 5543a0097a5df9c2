// The persistent worker pool (thread_pool.h) and the parallel-region counters (parallel.h).
//
// One region at a time: the caller publishes (call, ctx, nt), bumps `generation_` and wakes the
// sleepers; worker w < nt runs its part and decrements `pending_`; the caller runs part 0, then
// waits for `pending_` to reach 0. Waiting is a short spin on the atomic (pause instructions),
// then a futex sleep through std::atomic::wait. Sleep and wake pair up like this: a waiter
// announces itself (sleepers_ / caller_sleeping_) before it re-checks the value and sleeps, and a
// publisher changes the value before it reads the announcement (both seq_cst), so either the
// waiter sees the new value or the publisher sees the waiter and notifies.
#include "fasa/core/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <omp.h>

#include "fasa/core/parallel.h"
#include "fasa/core/pool_wait.h"
#include "fasa/core/workspace.h"

namespace fasa {

namespace {

using detail::now_s;
using detail::RangeMode;
using detail::spin_until;
using detail::tl_mode;
using detail::tl_wait_s;

struct alignas(64) WorkerSlot {
  double busy_s = 0.0;       // time in this region's work, written by the worker
  std::exception_ptr error;  // what its work threw, if anything
};

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(run_mutex_);
      stop_.store(true, std::memory_order_seq_cst);
      generation_.fetch_add(1, std::memory_order_seq_cst);
      generation_.notify_all();
    }
    for (std::thread& t : threads_) t.join();
  }

  // Called with run_mutex_ held.
  void run(int nt, void (*call)(void*, int), void* ctx) {
    grow(nt - 1);
    call_ = call;
    ctx_ = ctx;
    nt_ = nt;
    ws_ = detail::bound_workspace();
    pending_.store(nt - 1, std::memory_order_relaxed);
    const double t0 = now_s();
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();

    const RangeMode outer = tl_mode;
    tl_mode = RangeMode::kSerial;
    const double wait0 = tl_wait_s;
    std::exception_ptr err;
    try {
      call(ctx, 0);
    } catch (...) {
      err = std::current_exception();
    }
    tl_mode = outer;
    const double busy0 = now_s() - t0 - (tl_wait_s - wait0);

    if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
      caller_sleeping_.store(true, std::memory_order_seq_cst);
      for (int p = pending_.load(std::memory_order_seq_cst); p != 0;
           p = pending_.load(std::memory_order_seq_cst)) {
        pending_.wait(p, std::memory_order_seq_cst);
      }
      caller_sleeping_.store(false, std::memory_order_relaxed);
    }
    const double wall = now_s() - t0;
    double busy = busy0;
    for (int w = 1; w < nt; ++w) busy += slots_[w].busy_s;
    record(nt, wall, busy, 1);
    // The first error of the region (worker 0 first), once every worker is done with ctx.
    for (int w = 1; w < nt && !err; ++w) err = slots_[w].error;
    for (int w = 1; w < nt; ++w) slots_[w].error = nullptr;
    if (err) std::rethrow_exception(err);
  }

  std::mutex& run_mutex() { return run_mutex_; }

  ParallelStats stats() {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    return stats_;
  }

  void add_barriers(uint64_t n) {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    stats_.barriers += n;
  }

 private:
  void grow(int n_workers) {
    if (static_cast<int>(threads_.size()) >= n_workers) return;
    slots_.resize(static_cast<size_t>(n_workers) + 1);
    while (static_cast<int>(threads_.size()) < n_workers) {
      const int w = static_cast<int>(threads_.size()) + 1;
      threads_.emplace_back([this, w, gen = generation_.load()] { worker(w, gen); });
    }
  }

  void worker(int w, uint32_t seen) {
    tl_mode = RangeMode::kSerial;  // a worker never starts a region of its own
    detail::set_arena_index(w);    // its scratch, in whichever workspace a region brings
    while (true) {
      if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        generation_.wait(seen, std::memory_order_seq_cst);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        continue;  // re-check (spurious wake-ups)
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_acquire)) return;
      if (w < nt_) {
        const double b0 = now_s(), wait0 = tl_wait_s;
        detail::set_bound_workspace(ws_);  // the caller's
        try {
          call_(ctx_, w);
        } catch (...) {
          slots_[w].error = std::current_exception();
        }
        tl_mode = RangeMode::kSerial;  // whatever the region's work set
        detail::set_bound_workspace(nullptr);
        slots_[w].busy_s = now_s() - b0 - (tl_wait_s - wait0);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
            caller_sleeping_.load(std::memory_order_seq_cst)) {
          pending_.notify_one();
        }
      }
    }
  }

  void record(int nt, double wall, double busy, uint64_t barriers) {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    ++stats_.dispatches;
    stats_.barriers += barriers;
    stats_.wall_s += wall;
    stats_.thread_s += nt * wall;
    stats_.busy_s += busy;
  }

  std::mutex run_mutex_;  // one region at a time
  std::vector<std::thread> threads_;
  std::vector<WorkerSlot> slots_;  // [workers + 1]
  // The region: written by the caller before generation_ is bumped, read by workers after.
  void (*call_)(void*, int) = nullptr;
  void* ctx_ = nullptr;
  int nt_ = 0;
  Workspace* ws_ = nullptr;  // the caller's bound workspace (workspace.h)
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
  std::mutex stats_mutex_;
  ParallelStats stats_;
};

Pool& pool() {
  static Pool p;
  return p;
}

std::atomic<int> g_num_threads{0};

int default_threads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

int num_threads() {
  const int n = g_num_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  static const int def = default_threads();
  return def;
}

void set_num_threads(int n) { g_num_threads.store(n > 0 ? n : 0, std::memory_order_relaxed); }

ParallelStats parallel_stats() { return pool().stats(); }

ParallelStats operator-(const ParallelStats& a, const ParallelStats& b) {
  return {a.dispatches - b.dispatches, a.barriers - b.barriers, a.wall_s - b.wall_s,
          a.thread_s - b.thread_s, a.busy_s - b.busy_s};
}

namespace detail {

bool in_parallel_region() { return tl_mode != RangeMode::kTop || omp_in_parallel(); }

int range_width() {
  switch (tl_mode) {
    case RangeMode::kTop: return omp_in_parallel() ? 1 : num_threads();
    case RangeMode::kSerial: return 1;
    case RangeMode::kTeamAll:
    case RangeMode::kTeamLead: return team_size();
  }
  return 1;
}

bool ranges_are_collective() { return tl_mode == RangeMode::kTeamAll; }

void run_serially(int nt, void (*call)(void*, int), void* ctx) {
  const RangeMode outer = tl_mode;
  tl_mode = RangeMode::kSerial;
  try {
    for (int w = 0; w < nt; ++w) call(ctx, w);
  } catch (...) {
    tl_mode = outer;
    throw;
  }
  tl_mode = outer;
}

bool run_on_pool(int nt, void (*call)(void*, int), void* ctx, const uint64_t* barriers) {
  Pool& p = pool();
  std::unique_lock<std::mutex> lock(p.run_mutex(), std::try_to_lock);
  if (nt <= 1 || !lock.owns_lock()) return false;
  p.run(nt, call, ctx);
  if (barriers != nullptr && *barriers > 0) p.add_barriers(*barriers);
  return true;
}

void run_workers(int nt, void (*call)(void*, int), void* ctx) {
  switch (tl_mode) {
    case RangeMode::kTeamAll: team_share(nt, call, ctx); return;
    case RangeMode::kTeamLead: team_hand_off(nt, call, ctx); return;
    case RangeMode::kSerial: run_serially(nt, call, ctx); return;
    case RangeMode::kTop: break;
  }
  // Another thread's region runs: do it all here.
  if (!run_on_pool(nt, call, ctx, nullptr)) run_serially(nt, call, ctx);
}

}  // namespace detail
}  // namespace fasa
