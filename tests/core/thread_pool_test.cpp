// The engine's thread pool through parallel_ranges / parallel_for: every index once, the static
// partition, serial nesting, errors carried to the caller, concurrent callers, the counters.
#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fasa/core/parallel.h"
#include "support/threads_guard.h"

namespace fasa {
namespace {

using test::ThreadsGuard;

TEST(ThreadPool, EveryIndexRunsOnceForAnyThreadCount) {
  for (int nt : {1, 2, 3, 4, 7}) {
    ThreadsGuard g(nt);
    for (int64_t n : {1, 2, 3, 5, 64, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      for (int rep = 0; rep < 20; ++rep) parallel_for(n, [&](int64_t i) { ++hits[i]; });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 20) << "nt " << nt << " n " << n;
    }
  }
}

TEST(ThreadPool, RangesAreTheStaticPartition) {
  ThreadsGuard g(3);
  const int64_t n = 10;
  std::vector<int> owner(n, -1);
  parallel_ranges(n, [&](int64_t b, int64_t e, int w) {
    for (int64_t i = b; i < e; ++i) owner[i] = w;
  });
  // worker w gets [n w / 3, n (w + 1) / 3): 0..2, 3..5, 6..9
  EXPECT_EQ(owner, (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2, 2}));
}

TEST(ThreadPool, WorkersRunOnOtherThreads) {
  ThreadsGuard g(2);
  std::thread::id ids[2];
  parallel_ranges(2, [&](int64_t, int64_t, int w) { ids[w] = std::this_thread::get_id(); });
  EXPECT_EQ(ids[0], std::this_thread::get_id());
  EXPECT_NE(ids[1], ids[0]);
}

TEST(ThreadPool, NestedRegionsRunSeriallyOnTheirThread) {
  ThreadsGuard g(2);
  std::atomic<int> total{0};
  std::atomic<int> foreign{0};
  parallel_for(2, [&](int64_t) {
    const auto me = std::this_thread::get_id();
    parallel_ranges(8, [&](int64_t b, int64_t e, int w) {
      if (std::this_thread::get_id() != me || w != 0) ++foreign;
      total += static_cast<int>(e - b);
    });
  });
  EXPECT_EQ(total.load(), 16);
  EXPECT_EQ(foreign.load(), 0);
}

TEST(ThreadPool, AnErrorInAnyWorkerReachesTheCaller) {
  ThreadsGuard g(2);
  for (int64_t bad : {0, 1}) {
    EXPECT_THROW(parallel_for(2,
                              [&](int64_t i) {
                                if (i == bad) throw std::runtime_error("boom");
                              }),
                 std::runtime_error);
  }
  // The pool still works afterwards.
  std::atomic<int> n{0};
  parallel_for(100, [&](int64_t) { ++n; });
  EXPECT_EQ(n.load(), 100);
}

TEST(ThreadPool, ConcurrentCallersEachGetTheirWholeRegion) {
  ThreadsGuard g(2);
  std::atomic<int64_t> sums[2] = {0, 0};
  auto caller = [&](int c) {
    for (int rep = 0; rep < 200; ++rep) parallel_for(50, [&](int64_t i) { sums[c] += i; });
  };
  std::thread a(caller, 0), b(caller, 1);
  a.join();
  b.join();
  EXPECT_EQ(sums[0].load(), 200 * (49 * 50 / 2));
  EXPECT_EQ(sums[1].load(), 200 * (49 * 50 / 2));
}

TEST(ThreadPool, CountsDispatchesAndTime) {
  ThreadsGuard g(2);
  const ParallelStats s0 = parallel_stats();
  for (int rep = 0; rep < 5; ++rep) {
    parallel_for(2, [](int64_t) {
      volatile double x = 0;
      for (int i = 0; i < 10000; ++i) x = x + i;
    });
  }
  parallel_for(1, [](int64_t) {});  // one index: serial, not a region
  const ParallelStats d = parallel_stats() - s0;
  EXPECT_EQ(d.dispatches, 5u);
  EXPECT_GT(d.busy_s, 0.0);
  EXPECT_LE(d.busy_s, d.thread_s * 1.0001);
  EXPECT_NEAR(d.thread_s, 2.0 * d.wall_s, 1e-9);
  EXPECT_GE(d.wait_share(), 0.0);
  EXPECT_LT(d.wait_share(), 1.0);
}

}  // namespace
}  // namespace fasa
