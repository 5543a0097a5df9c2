// Sets an environment variable for one scope and restores its previous value (or absence).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace fasa::test {

struct ScopedEnv {
  std::string name;
  std::optional<std::string> saved;
  ScopedEnv(std::string var, const char* value) : name(std::move(var)) {
    if (const char* v = std::getenv(name.c_str())) saved = v;
    setenv(name.c_str(), value, 1);
  }
  ~ScopedEnv() {
    if (saved) {
      setenv(name.c_str(), saved->c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

}  // namespace fasa::test
