// Restores the active instruction set a test changed (core/isa.h).
#pragma once

#include "fasa/core/isa.h"

namespace fasa {

struct IsaGuard {
  Isa saved = active_isa();
  ~IsaGuard() { set_active_isa(saved); }
};

}  // namespace fasa
