// Sets the engine's thread count for one test and restores the default (num_threads() from the
// CPUs or OMP_NUM_THREADS) when it ends.
#pragma once

#include "fasa/core/parallel.h"

namespace fasa::test {

struct ThreadsGuard {
  explicit ThreadsGuard(int n) { set_num_threads(n); }
  ~ThreadsGuard() { set_num_threads(0); }
};

}  // namespace fasa::test
