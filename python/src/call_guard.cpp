#include "call_guard.h"

#include <Python.h>
#include <pythread.h>

namespace fasa::py {

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);

// Python's main thread (GIL held): the one thread its signal handlers run on.
bool on_main_thread() {
  static const unsigned long main_ident =
      pb::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  return PyThread_get_thread_ident() == main_ident;
}

}  // namespace

CallGuard::CallGuard()
    : caller_(std::this_thread::get_id()),
      main_thread_(on_main_thread()),
      last_poll_(std::chrono::steady_clock::now()),
      check_([this] { poll(); }) {}

void CallGuard::poll() {
  if (!stopping() && main_thread_ && std::this_thread::get_id() == caller_) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_poll_ >= kPollInterval) {
      last_poll_ = now;
      pb::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) keep(pb::error_already_set());
    }
  }
  if (stopping()) throw Interrupted();
}

void CallGuard::with_gil(const std::function<void()>& fn) {
  pb::gil_scoped_acquire gil;
  try {
    fn();
  } catch (pb::error_already_set& e) {
    keep(std::move(e));
  }
}

void CallGuard::keep(pb::error_already_set e) {
  const std::lock_guard<std::mutex> lock(mu_);
  if (!kept_) kept_ = std::make_unique<pb::error_already_set>(std::move(e));
  stop_.store(true, std::memory_order_relaxed);
}

void CallGuard::raise_kept() {
  std::unique_ptr<pb::error_already_set> e;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    e = std::move(kept_);
  }
  if (e) throw pb::error_already_set(*e);
}

}  // namespace fasa::py
