// A way to abandon a long engine call from outside it: a front end whose user may stop one (the
// Python package's Ctrl-C) installs a check on the thread that makes the call (InterruptScope),
// and the engine runs it at its interruption points, between units of work: before each forward
// step of a Session (every prefill chunk and decode step). A check that throws abandons the call
// there; what the call leaves is valid (a session holds the tokens appended before the point).
// Threads an engine call starts for its own work take the caller's check
// (InterruptScope(current_interrupt_check())). With no check installed, an interruption point
// costs one thread-local read.
#pragma once

#include <functional>

namespace fasa {

using InterruptCheck = std::function<void()>;

// Installs `check` (may be null: none) for the calling thread until destroyed; the scope it
// replaced comes back then. `check` must outlive the scope.
class InterruptScope {
 public:
  explicit InterruptScope(const InterruptCheck* check);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  const InterruptCheck* outer_;
};

// The calling thread's check (null: none).
const InterruptCheck* current_interrupt_check();

// Runs the calling thread's check, if any (which may throw).
inline void interruption_point() {
  if (const InterruptCheck* check = current_interrupt_check()) (*check)();
}

}  // namespace fasa
