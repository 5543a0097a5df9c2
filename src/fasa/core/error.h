// Errors and invariant checks.
//
// fasa::Error  — bad input at load, config or request time (files, flags, prompts). Thrown with
//                context (what, where, expected vs got); caught at the boundary (main, server).
// FASA_CHECK   — broken internal invariant: prints and aborts. Never used for user input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace fasa {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

template <typename... Args>
[[noreturn]] inline void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "fasa: internal check failed: %s (%s:%d)\n", expr, file, line);
  std::abort();
}

}  // namespace fasa

#define FASA_CHECK(cond)                                          \
  do {                                                            \
    if (!(cond)) ::fasa::check_failed(#cond, __FILE__, __LINE__); \
  } while (0)

#ifndef NDEBUG
#define FASA_DCHECK(cond) FASA_CHECK(cond)
#else
#define FASA_DCHECK(cond) \
  do {                    \
  } while (0)
#endif
