#include "fasa/core/parallel.h"

#include <atomic>
#include <mutex>

namespace fasa {

namespace {
std::atomic<int> g_num_threads{0};
std::mutex g_stats_mutex;
ParallelStats g_stats;
}  // namespace

int num_threads() {
  const int n = g_num_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : omp_get_max_threads();
}

void set_num_threads(int n) { g_num_threads.store(n > 0 ? n : 0, std::memory_order_relaxed); }

ParallelStats parallel_stats() {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  return g_stats;
}

ParallelStats operator-(const ParallelStats& a, const ParallelStats& b) {
  return {a.dispatches - b.dispatches, a.wall_s - b.wall_s, a.thread_s - b.thread_s,
          a.busy_s - b.busy_s};
}

namespace detail {
void add_region(int nt, double wall_s, double busy_s) {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  ++g_stats.dispatches;
  g_stats.wall_s += wall_s;
  g_stats.thread_s += nt * wall_s;
  g_stats.busy_s += busy_s;
}
}  // namespace detail

}  // namespace fasa
