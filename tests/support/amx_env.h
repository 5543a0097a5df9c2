// The test binary runs with AMX off (tests/support/amx_env.cpp sets FASA_NO_AMX=1 before main,
// unless the environment already sets it): the other tests' bitwise contracts (batch = single
// token, chunked prefill = decode) are the VNNI path's; AMX has its own tests with tolerances.
// `FASA_NO_AMX=0 ./fasa_tests` runs the whole suite with AMX. AmxEnv switches it for one scope.
#pragma once

#include "support/scoped_env.h"

namespace fasa::test {

struct AmxEnv : ScopedEnv {
  explicit AmxEnv(bool amx_on) : ScopedEnv("FASA_NO_AMX", amx_on ? "0" : "1") {}
};

}  // namespace fasa::test
