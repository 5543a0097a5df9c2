// The engine's worker threads: one persistent pool per process, so a parallel region costs a
// wake-up of already running threads rather than a team start. The caller is worker 0 and works
// too; workers 1 .. n - 1 wait for the next region by spinning briefly (a region usually follows
// within microseconds during a forward pass) and then sleeping on a futex (std::atomic::wait), so
// idle workers cost no CPU and a machine whose cores are busy with other processes slows in
// proportion instead of losing whole time slices to spinning threads. The caller waits for the
// workers the same way: spin briefly, then sleep.
#pragma once

#include <cstdint>

namespace fasa {

struct ParallelStats;

namespace detail {

// Runs call(ctx, w) for w in [0, nt): w = 0 on the calling thread, the others on pool workers;
// returns when all have returned. Not reentrant: a call from inside a region (any worker) or
// while another thread's region runs executes serially on the caller (w = 0 .. nt - 1 in order).
// In a team (team.cpp): in its collective code this worker runs its own part and then waits at
// the team's barrier; in team_single, worker 0 hands the parts to the waiting workers.
void run_workers(int nt, void (*call)(void* ctx, int w), void* ctx);

// True on a pool worker or on a thread inside run_workers or a team.
bool in_parallel_region();

// How many workers a range may be split over here: num_threads() outside any region, the team's
// size in a team (1 for a team of one), 1 inside a region's work.
int range_width();
// True in a team's collective code: every worker calls parallel_ranges, so even a range that
// one worker runs ends in the team barrier.
bool ranges_are_collective();

// Team regions (parallel.h): body(ctx) on every worker of one pool dispatch, or on the caller
// alone (a team of one) where no region can open. Errors thrown in a parallel step or in
// team_single reach the caller.
void run_team(void (*body)(void* ctx), void* ctx);
void team_single(void (*fn)(void* ctx), void* ctx);
int team_size();
int team_worker();

// Internal to thread_pool.cpp and team.cpp.
void team_share(int nt, void (*call)(void* ctx, int w), void* ctx);
void team_hand_off(int nt, void (*call)(void* ctx, int w), void* ctx);
void run_serially(int nt, void (*call)(void* ctx, int w), void* ctx);
// Runs the region on the pool and returns true, or returns false (nothing run) if nt <= 1 or
// another thread's region holds the pool. Adds *extra_barriers (read after the region) to the
// counters.
bool run_on_pool(int nt, void (*call)(void* ctx, int w), void* ctx, const uint64_t* extra_barriers);

}  // namespace detail
}  // namespace fasa
