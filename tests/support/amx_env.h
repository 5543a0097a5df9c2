// The test binary runs with AMX off (tests/support/amx_env.cpp sets FASA_NO_AMX=1 before main,
// unless the environment already sets it): the other tests' bitwise contracts (batch = single
// token, chunked prefill = decode) are the VNNI path's; AMX has its own tests with tolerances.
// `FASA_NO_AMX=0 ./fasa_tests` runs the whole suite with AMX. AmxEnv switches it for one scope.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace fasa::test {

struct AmxEnv {
  std::optional<std::string> saved;
  explicit AmxEnv(bool amx_on) {
    if (const char* v = std::getenv("FASA_NO_AMX")) saved = v;
    setenv("FASA_NO_AMX", amx_on ? "0" : "1", 1);
  }
  ~AmxEnv() {
    if (saved) {
      setenv("FASA_NO_AMX", saved->c_str(), 1);
    } else {
      unsetenv("FASA_NO_AMX");
    }
  }
};

}  // namespace fasa::test
