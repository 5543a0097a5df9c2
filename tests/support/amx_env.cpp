#include "support/amx_env.h"

namespace {
// Before main (and before any child process the CLI tests spawn, which inherit it).
[[maybe_unused]] const bool kAmxOffByDefault = setenv("FASA_NO_AMX", "1", /*overwrite=*/0) == 0;
}  // namespace
