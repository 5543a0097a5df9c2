#include "progress_line.h"

#include <unistd.h>

#include <fmt/format.h>

namespace fasa::cli {

std::string duration_text(double s) {
  const int whole = static_cast<int>(s);
  if (whole < 60) return fmt::format("{}s", whole);
  if (whole < 3600) return fmt::format("{}m{:02d}s", whole / 60, whole % 60);
  return fmt::format("{}h{:02d}m", whole / 3600, whole / 60 % 60);
}

ProgressLine::ProgressLine(std::string what, bool tty)
    : what_(std::move(what)), tty_(tty), t0_(Clock::now()) {}

ProgressLine::ProgressLine(std::string what)
    : ProgressLine(std::move(what), isatty(STDERR_FILENO) != 0) {}

void ProgressLine::restart(std::string what) {
  what_ = std::move(what);
  t0_ = Clock::now();
  printed_ = false;
}

std::string ProgressLine::text(const std::string& what, int done, int total, double share,
                               double elapsed_s) {
  const double part = share >= 0.0 ? share : total > 0 ? static_cast<double>(done) / total : 0.0;
  std::string s = fmt::format("fasa: {}/{} {}", done, total, what);
  if (done > 0 && elapsed_s > 0.0) s += fmt::format(", {:.2f}/s", done / elapsed_s);
  s += ", " + duration_text(elapsed_s) + " elapsed";
  if (part > 0.0) s += ", ~" + duration_text(elapsed_s / part * (1.0 - part)) + " left";
  return s;
}

void ProgressLine::update(int done, int total, double share) {
  const Clock::time_point now = Clock::now();
  const bool last = done >= total;
  // A terminal: every 0.1 s. A file or a pipe: a first line after 1 s (the work is under way),
  // then one every 10 s; a run shorter than a second prints only its end.
  const auto every = tty_       ? std::chrono::milliseconds(100)
                     : printed_ ? std::chrono::milliseconds(10000)
                                : std::chrono::milliseconds(1000);
  if (!last && now - (printed_ ? last_ : t0_) < every) return;
  const double elapsed = std::chrono::duration<double>(now - t0_).count();
  const std::string line = text(what_, done, total, share, elapsed);
  if (tty_) {
    std::fprintf(stderr, "\r%s   %s", line.c_str(), last ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
  last_ = now;
  printed_ = true;
}

}  // namespace fasa::cli
