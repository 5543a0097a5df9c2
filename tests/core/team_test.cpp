// Team regions (core/parallel.h: parallel_team, team_single): one dispatch, every worker runs the
// body, parallel steps are the static partition and end in a barrier, team_single runs once and
// hands its ranges to the waiting workers, errors reach the caller, and a team of one runs where
// no region can open.
#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fasa/core/parallel.h"
#include "support/threads_guard.h"

namespace fasa {
namespace {

using test::ThreadsGuard;

TEST(Team, EveryWorkerRunsTheBodyOnce) {
  for (int nt : {1, 2, 3}) {
    ThreadsGuard g(nt);
    std::atomic<int> bodies{0};
    std::vector<std::atomic<int>> seen(4);
    std::atomic<int> sizes_ok{0};
    const ParallelStats s0 = parallel_stats();
    parallel_team([&] {
      ++bodies;
      ++seen[team_worker()];
      if (team_size() == nt) ++sizes_ok;
    });
    EXPECT_EQ(bodies.load(), nt);
    EXPECT_EQ(sizes_ok.load(), nt);
    for (int w = 0; w < nt; ++w) EXPECT_EQ(seen[w].load(), 1) << w;
    EXPECT_EQ((parallel_stats() - s0).dispatches, nt > 1 ? 1u : 0u);
  }
}

// Each step's writes are complete for every worker after the step (its barrier), and the step
// gives worker w the same range a region of its own would.
TEST(Team, StepsAreTheStaticPartitionAndEndInABarrier) {
  ThreadsGuard g(3);
  const int64_t n = 10;
  std::vector<int> owner(n, -1);
  std::vector<int64_t> a(n, 0);
  std::atomic<int> complete{0};
  parallel_team([&] {
    for (int step = 1; step <= 50; ++step) {
      parallel_ranges(n, [&](int64_t b, int64_t e, int w) {
        for (int64_t i = b; i < e; ++i) {
          owner[i] = w;
          a[i] += step;
        }
      });
      int64_t sum = 0;  // every worker reads all of a: the step's writes are visible
      for (int64_t v : a) sum += v;
      if (sum == n * step * (step + 1) / 2) ++complete;
      // The next step may not write before every worker has read: a step of nothing but a barrier.
      parallel_ranges(1, [](int64_t, int64_t, int) {});
    }
  });
  EXPECT_EQ(owner, (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2, 2}));
  EXPECT_EQ(complete.load(), 3 * 50);
}

TEST(Team, SingleRunsOnceAndHandsItsRangesToTheOthers) {
  ThreadsGuard g(3);
  std::atomic<int> runs{0};
  std::vector<std::thread::id> ids(3);
  std::vector<int> workers(3, -1);
  int value = 0;
  std::atomic<int> saw_value{0};
  parallel_team([&] {
    team_single([&] {
      ++runs;
      parallel_ranges(3, [&](int64_t b, int64_t, int w) {
        ids[b] = std::this_thread::get_id();
        workers[b] = w;
      });
      value = 42;
    });
    if (value == 42) ++saw_value;  // every worker continues after the section
  });
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(saw_value.load(), 3);
  EXPECT_EQ(workers, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(ids[0], std::this_thread::get_id());
  EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), 3u);
}

TEST(Team, OneDispatchCountsItsBarriers) {
  ThreadsGuard g(2);
  const ParallelStats s0 = parallel_stats();
  parallel_team([&] {
    for (int i = 0; i < 4; ++i) parallel_for(8, [](int64_t) {});  // 4 barriers
    team_single([] { parallel_for(8, [](int64_t) {}); });         // a hand-off and the end
  });
  const ParallelStats d = parallel_stats() - s0;
  EXPECT_EQ(d.dispatches, 1u);
  EXPECT_EQ(d.barriers, 4u + 2u + 1u);  // + the region's own end
  EXPECT_GE(d.wait_share(), 0.0);
  EXPECT_LT(d.wait_share(), 1.0);
}

TEST(Team, ErrorsInStepsAndSectionsReachTheCaller) {
  ThreadsGuard g(2);
  for (int bad : {0, 1}) {
    EXPECT_THROW(parallel_team([&] {
                   parallel_for(2, [&](int64_t i) {
                     if (i == bad) throw std::runtime_error("step");
                   });
                   parallel_for(2, [](int64_t) {});
                 }),
                 std::runtime_error);
    EXPECT_THROW(parallel_team([&] {
                   team_single([&] {
                     parallel_for(2, [&](int64_t i) {
                       if (i == bad) throw std::runtime_error("hand-off");
                     });
                   });
                 }),
                 std::runtime_error);
  }
  EXPECT_THROW(parallel_team([] { team_single([] { throw std::runtime_error("section"); }); }),
               std::runtime_error);
  // The pool and teams still work afterwards.
  std::atomic<int> n{0};
  parallel_team([&] { parallel_for(100, [&](int64_t) { ++n; }); });
  EXPECT_EQ(n.load(), 100);
}

TEST(Team, ATeamOfOneWhereNoRegionCanOpen) {
  ThreadsGuard g(2);
  std::atomic<int> bodies{0}, size_one{0};
  parallel_for(2, [&](int64_t) {  // inside a region
    parallel_team([&] {
      ++bodies;
      if (team_size() == 1 && team_worker() == 0) ++size_one;
      int64_t total = 0;
      parallel_ranges(8, [&](int64_t b, int64_t e, int) { total += e - b; });
      team_single([&] { total += 1; });
      EXPECT_EQ(total, 9);
    });
  });
  EXPECT_EQ(bodies.load(), 2);
  EXPECT_EQ(size_one.load(), 2);
  // Two callers at once: one of them runs its teams alone.
  std::atomic<int64_t> sums[2] = {0, 0};
  auto caller = [&](int c) {
    for (int rep = 0; rep < 100; ++rep) {
      parallel_team([&] {
        std::atomic<int64_t> local{0};
        parallel_for(50, [&](int64_t i) { local += i; });
        team_single([&] { sums[c] += 1; });
      });
    }
  };
  std::thread a(caller, 0), b(caller, 1);
  a.join();
  b.join();
  EXPECT_EQ(sums[0].load(), 100);
  EXPECT_EQ(sums[1].load(), 100);
}

}  // namespace
}  // namespace fasa
