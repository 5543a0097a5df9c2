// SnapKV's machinery, shared by `snapkv` and `pyramidkv` (which differ only in how the budget is
// spread over the layers). See snapkv.cpp.
#pragma once

#include <memory>
#include <string>

#include "fasa/attention/policy.h"

namespace fasa {

struct SnapOptions {
  double budget = 0.0;  // tokens per step per kv-head group (per head with per_head), or < 1
  int window = 32;      // observation window: the last `window` queries vote
  int kernel = 7;       // 1-D max-pool width (odd), same padding
  bool per_head = false;
  int recompress = 0;   // re-vote every n decode steps (0 = only after a prefill)
  int beta = 0;         // 0: every layer gets the budget (SnapKV); > 0: PyramidKV's pyramid
};

// Parses one of budget, window, kernel, gqa, recompress into o; false for another key. Throws
// fasa::Error for a bad value.
bool parse_snap_option(const std::string& policy, const std::string& key, const std::string& value,
                       SnapOptions& o);
// Parses a whole number in [lo, hi] for option `key`, or throws one clear fasa::Error.
int parse_whole(const std::string& policy, const std::string& key, const std::string& value,
                int lo, int hi);
// PyramidKV's budget of global layer `row` of n_layers when the mean budget is k and the vote
// happens at n_visible slots (pyramidkv.cpp; the mean over the layers is exactly k).
int pyramid_layer_budget(int k, int n_visible, int window, int beta, int n_layers, int row);
// `name` is "snapkv" or "pyramidkv" (with o.beta > 0).
std::unique_ptr<AttentionPolicy> make_snap_policy(const PolicyContext& ctx, const SnapOptions& o,
                                                  const std::string& name);

}  // namespace fasa
