// Ctrl-C, and errors raised by Python callbacks, during an engine call that runs with the GIL
// released. Python runs signal handlers only on its main thread and only with the GIL, so a
// SIGINT would otherwise wait for the call to return. A CallGuard made for the call (guarded())
// fixes that: the engine's interruption points (core/interrupt.h: before every forward step)
// and the bindings' callbacks call poll(), which on the main thread, at most every 50 ms, takes
// the GIL and runs the handlers. An exception they raise (KeyboardInterrupt), or one a Python
// callback raised (call()), is kept and stops the engine: poll() throws Interrupted from then on,
// on every thread. Once the engine has unwound, guarded() raises the kept exception in Python.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>

#include "bindings.h"
#include "fasa/core/interrupt.h"

namespace fasa::py {

// What poll() throws once the guard stops the engine (guarded() raises the kept error instead).
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted from Python") {}
};

class CallGuard {
 public:
  CallGuard();  // GIL held, on the thread that makes the engine call

  // Any thread, GIL not held. Throws Interrupted once the guard stops the engine.
  void poll();
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }
  // Runs fn (Python calls) from any thread with the GIL; a Python exception it raises is kept
  // and stops the engine at its next poll, not thrown here.
  void with_gil(const std::function<void()>& fn);
  // GIL held: throws the kept Python exception, if any.
  void raise_kept();
  const InterruptCheck& check() const { return check_; }

 private:
  void keep(pb::error_already_set e);

  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::unique_ptr<pb::error_already_set> kept_;  // (made and destroyed with the GIL held)
  std::thread::id caller_;
  bool main_thread_ = false;  // the caller is Python's main thread (which sees signals)
  std::chrono::steady_clock::time_point last_poll_;
  InterruptCheck check_;
};

// Runs fn(guard) with the GIL released and guard's check installed as the calling thread's
// interruption check; then raises whatever the guard kept (KeyboardInterrupt, a callback's
// exception), also when fn finished anyway; else returns fn's result or lets its exception
// through.
template <typename Fn>
auto guarded(Fn&& fn) -> decltype(fn(std::declval<CallGuard&>())) {
  CallGuard guard;
  auto released = [&]() -> decltype(fn(guard)) {
    pb::gil_scoped_release nogil;
    const InterruptScope scope(&guard.check());
    return fn(guard);
  };
  try {
    if constexpr (std::is_void_v<decltype(fn(guard))>) {
      released();
      guard.raise_kept();
    } else {
      auto r = released();
      guard.raise_kept();
      return r;
    }
  } catch (...) {
    guard.raise_kept();
    throw;
  }
}

}  // namespace fasa::py
