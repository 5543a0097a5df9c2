#include "fasa/core/interrupt.h"

namespace fasa {

namespace {

thread_local const InterruptCheck* tl_check = nullptr;

}  // namespace

InterruptScope::InterruptScope(const InterruptCheck* check) : outer_(tl_check) { tl_check = check; }

InterruptScope::~InterruptScope() { tl_check = outer_; }

const InterruptCheck* current_interrupt_check() { return tl_check; }

}  // namespace fasa
