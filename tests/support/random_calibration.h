// A calibration file for a policy test's shape with random agreements: what such tests need is
// an FC ranking, not a measured one.
#pragma once

#include <string>

#include "fasa/attention/kv_cache.h"

namespace fasa::test {

// Writes ::testing::TempDir()/<name>_<pid>.json (per process: ctest runs tests in parallel
// processes) and returns its path: a llama-layout calibration of `shape` (every layer global,
// every FC), model `sha`, mean CA drawn uniformly in [0, 1) from seed 2, ranked; with
// `channel_importance`, Double Sparsity's statistic too (uniform, from the same generator).
std::string write_random_calibration(const AttnShape& shape, const std::string& sha,
                                     const std::string& name, bool channel_importance = false);

}  // namespace fasa::test
