// The progress of a long command on stderr: "fasa: 12/45 tasks, 2.10/s, 6s elapsed, ~15s left".
// On a terminal one line rewritten in place ('\r') at most ten times a second; in a file or a
// pipe whole lines with no '\r': the first after 1 s, then at most one every 10 s, and the last.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace fasa::cli {

class ProgressLine {
 public:
  // what: the units counted ("tasks", "generations", "sample"); `tty`: stderr is a terminal.
  explicit ProgressLine(std::string what, bool tty);
  // stderr's kind decides.
  explicit ProgressLine(std::string what);

  // `done` of `total` units; share: the share of the work done when the units are unequal (< 0:
  // done / total). The clock starts at construction or restart().
  void update(int done, int total, double share = -1.0);
  // A new phase counted from now on ("compound set" after "sample").
  void restart(std::string what);

  // The line as printed (no "\r", no newline), for the tests.
  static std::string text(const std::string& what, int done, int total, double share,
                          double elapsed_s);

 private:
  using Clock = std::chrono::steady_clock;
  std::string what_;
  bool tty_;
  Clock::time_point t0_;
  Clock::time_point last_{};  // the last line printed
  bool printed_ = false;
};

// "42s", "3m05s", "2h10m".
std::string duration_text(double seconds);

}  // namespace fasa::cli
