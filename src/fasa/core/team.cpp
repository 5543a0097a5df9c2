// Team regions (parallel.h: parallel_team, team_single): one pool dispatch whose workers run the
// same code and meet at barriers instead of a region per parallel step.
//
// Barrier: a counter and a generation; the last worker to arrive resets the counter and bumps the
// generation, the others wait for the bump (spin, then futex; pool_wait.h).
// team_single: worker 0 runs the section while the others serve it: for each parallel_ranges in
// the section worker 0 publishes (call, ctx, nt), bumps `job_gen` and runs part 0; every other
// worker runs its part (if any) and acknowledges by decrementing `pending`; worker 0 waits for
// all acknowledgements before it returns, so the next hand-off never overwrites a job a worker has
// not read. The section's end is a last hand-off with no call. Errors: a parallel step's error
// is kept and every worker leaves the team together at the step's barrier (TeamAborted), and
// run_team rethrows the first kept error on the caller.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "fasa/core/parallel.h"
#include "fasa/core/pool_wait.h"

namespace fasa::detail {

namespace {

struct TeamAborted {};  // unwinds every worker's collective code after a kept error

struct Team {
  explicit Team(int n) : size(n), errors(static_cast<size_t>(n)) {}

  int size;
  void (*body)(void*) = nullptr;
  void* body_ctx = nullptr;
  uint64_t syncs = 0;                      // barriers and hand-offs; counted by worker 0 only
  std::vector<std::exception_ptr> errors;  // [size] the kept error of each worker
  std::atomic<bool> failed{false};

  alignas(64) std::atomic<uint32_t> bar_gen{0};
  alignas(64) std::atomic<int> bar_count{0};
  std::atomic<int> bar_sleepers{0};

  // The hand-off of team_single: written by worker 0 before job_gen is bumped.
  alignas(64) std::atomic<uint32_t> job_gen{0};
  std::atomic<int> job_sleepers{0};
  void (*job_call)(void*, int) = nullptr;  // null: the section has ended
  void* job_ctx = nullptr;
  int job_nt = 0;
  alignas(64) std::atomic<int> pending{0};
  std::atomic<int> lead_sleepers{0};
};

thread_local Team* tl_team = nullptr;
thread_local int tl_worker = 0;
thread_local uint32_t tl_seen_job = 0;  // the last hand-off this worker has served

void keep_error(Team& t, int w) {
  if (!t.errors[w]) t.errors[w] = std::current_exception();
  t.failed.store(true, std::memory_order_release);
}

void barrier(Team& t) {
  if (tl_worker == 0) ++t.syncs;
  const uint32_t g = t.bar_gen.load(std::memory_order_acquire);
  if (t.bar_count.fetch_add(1, std::memory_order_acq_rel) == t.size - 1) {
    t.bar_count.store(0, std::memory_order_relaxed);
    t.bar_gen.fetch_add(1, std::memory_order_seq_cst);
    notify_changed(t.bar_gen, t.bar_sleepers);
  } else {
    wait_for(t.bar_gen, t.bar_sleepers, [g](uint32_t v) { return v != g; });
  }
}

// Worker 0: publishes a hand-off and waits until every other worker has acknowledged it.
void hand_off(Team& t, void (*call)(void*, int), void* ctx, int nt) {
  ++t.syncs;
  t.job_call = call;
  t.job_ctx = ctx;
  t.job_nt = nt;
  t.pending.store(t.size - 1, std::memory_order_relaxed);
  t.job_gen.fetch_add(1, std::memory_order_seq_cst);
  notify_changed(t.job_gen, t.job_sleepers);
}

void await_acks(Team& t) {
  wait_for(t.pending, t.lead_sleepers, [](int v) { return v == 0; });
}

// Workers 1 ..: serve worker 0's hand-offs until the section ends.
void serve(Team& t) {
  const int w = tl_worker;
  while (true) {
    const uint32_t seen = tl_seen_job;
    wait_for(t.job_gen, t.job_sleepers, [seen](uint32_t v) { return v != seen; });
    tl_seen_job = seen + 1;  // worker 0 publishes the next one only after every ack
    void (*call)(void*, int) = t.job_call;
    if (call != nullptr && w < t.job_nt) {
      tl_mode = RangeMode::kSerial;
      try {
        call(t.job_ctx, w);
      } catch (...) {
        t.errors[w] = std::current_exception();  // rethrown by worker 0 after this hand-off
      }
      tl_mode = RangeMode::kTeamAll;
    }
    if (t.pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      notify_changed(t.pending, t.lead_sleepers);
    }
    if (call == nullptr) return;
  }
}

void team_entry(void* p, int w) {
  Team& t = *static_cast<Team*>(p);
  Team* const outer_team = tl_team;
  const int outer_worker = tl_worker;
  tl_team = &t;
  tl_worker = w;
  tl_seen_job = 0;
  tl_mode = RangeMode::kTeamAll;
  try {
    t.body(t.body_ctx);
  } catch (const TeamAborted&) {
    // A kept error ended the team; run_team rethrows it.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fasa: internal error: an exception left a team's collective code: %s\n",
                 e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fasa: internal error: an exception left a team's collective code\n");
    std::abort();
  }
  tl_team = outer_team;
  tl_worker = outer_worker;
}

}  // namespace

void run_team(void (*body)(void*), void* ctx) {
  if (tl_mode == RangeMode::kTeamAll) {  // collective code already: this team runs it
    body(ctx);
    return;
  }
  const int nt = range_width();
  if (tl_mode != RangeMode::kTop || nt <= 1) {  // a team of one, here
    Team* const outer_team = tl_team;
    const int outer_worker = tl_worker;
    const RangeMode outer_mode = tl_mode;
    tl_team = nullptr;
    tl_worker = 0;
    if (tl_mode != RangeMode::kTop) tl_mode = RangeMode::kSerial;
    try {
      body(ctx);
    } catch (...) {
      tl_team = outer_team;
      tl_worker = outer_worker;
      tl_mode = outer_mode;
      throw;
    }
    tl_team = outer_team;
    tl_worker = outer_worker;
    tl_mode = outer_mode;
    return;
  }
  Team t(nt);
  t.body = body;
  t.body_ctx = ctx;
  if (!run_on_pool(nt, &team_entry, &t, &t.syncs)) {  // another thread's region holds the pool
    body(ctx);
    return;
  }
  for (const std::exception_ptr& e : t.errors) {
    if (e) std::rethrow_exception(e);
  }
}

void team_share(int nt, void (*call)(void*, int), void* ctx) {
  Team& t = *tl_team;
  const int w = tl_worker;
  if (w < nt) {
    tl_mode = RangeMode::kSerial;
    try {
      call(ctx, w);
    } catch (...) {
      keep_error(t, w);
    }
    tl_mode = RangeMode::kTeamAll;
  }
  barrier(t);
  if (t.failed.load(std::memory_order_acquire)) throw TeamAborted{};
}

void team_hand_off(int nt, void (*call)(void*, int), void* ctx) {
  Team& t = *tl_team;
  hand_off(t, call, ctx, nt);
  std::exception_ptr err;
  tl_mode = RangeMode::kSerial;
  try {
    call(ctx, 0);
  } catch (...) {
    err = std::current_exception();
  }
  tl_mode = RangeMode::kTeamLead;
  await_acks(t);
  for (int w = 1; w < t.size && !err; ++w) err = t.errors[w];
  for (int w = 1; w < t.size; ++w) t.errors[w] = nullptr;
  if (err) std::rethrow_exception(err);
}

void team_single(void (*fn)(void*), void* ctx) {
  Team& t = *tl_team;
  if (tl_worker != 0) {
    serve(t);
  } else {
    tl_mode = RangeMode::kTeamLead;
    try {
      fn(ctx);
    } catch (...) {
      keep_error(t, 0);
    }
    tl_mode = RangeMode::kTeamAll;
    hand_off(t, nullptr, nullptr, 0);  // the end of the section
    await_acks(t);
  }
  if (t.failed.load(std::memory_order_acquire)) throw TeamAborted{};
}

int team_size() { return tl_team != nullptr ? tl_team->size : 1; }
int team_worker() { return tl_team != nullptr ? tl_worker : 0; }

}  // namespace fasa::detail
