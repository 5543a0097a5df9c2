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
void run_workers(int nt, void (*call)(void* ctx, int w), void* ctx);

// True on a pool worker or on a thread inside run_workers.
bool in_parallel_region();

}  // namespace detail
}  // namespace fasa
