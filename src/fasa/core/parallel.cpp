#include "fasa/core/parallel.h"

#include <atomic>

namespace fasa {

namespace {
std::atomic<int> g_num_threads{0};
}

int num_threads() {
  const int n = g_num_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : omp_get_max_threads();
}

void set_num_threads(int n) { g_num_threads.store(n > 0 ? n : 0, std::memory_order_relaxed); }

}  // namespace fasa
