#include "support/tiny_calibration.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "fasa/attention/calibration.h"
#include "fasa/calibrate/calibrator.h"

namespace fasa::test {

std::string calibrate_tiny(const std::shared_ptr<const Model>& model, const std::string& name) {
  std::mt19937 rng(17);
  std::vector<int32_t> text(80);
  for (auto& t : text) t = static_cast<int32_t>(rng() % model->config().n_vocab);
  CalibrateOptions co;
  co.k = 8;
  co.samples = 2;
  co.tokens = 30;
  co.steps = 3;
  const std::string path = ::testing::TempDir() + "/" + name;
  save_calibration(calibrate(model, text, co, nullptr), path);
  return path;
}

}  // namespace fasa::test
