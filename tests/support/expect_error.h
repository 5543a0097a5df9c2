// Expects `fn` to throw fasa::Error whose message contains `needle` (fails the test otherwise).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "fasa/core/error.h"

namespace fasa::test {

inline void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; wanted '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace fasa::test
