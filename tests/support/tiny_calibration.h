// A FASA calibration of a tiny test model, quickly: random tokens, small settings.
#pragma once

#include <memory>
#include <string>

#include "fasa/model/model.h"

namespace fasa::test {

// Calibrates `model` on 80 seeded random tokens (K 8, 2 samples of 30 tokens + 3 decode steps)
// and saves it as ::testing::TempDir()/<name>; returns the file's path.
std::string calibrate_tiny(const std::shared_ptr<const Model>& model, const std::string& name);

}  // namespace fasa::test
