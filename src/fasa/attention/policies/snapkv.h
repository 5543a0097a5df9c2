// SnapKV's machinery, shared by `snapkv` and `pyramidkv` (which differ only in how the budget is
// spread over the layers). See snapkv.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/policies/option_table.h"
#include "fasa/attention/policy.h"

namespace fasa {

struct SnapOptions {
  double budget = 0.0;  // tokens per step per kv-head group (per head with per_head), or < 1
  int window = 32;      // observation window: the last `window` queries vote
  int kernel = 7;       // 1-D max-pool width (odd), same padding
  bool per_head = false;
  int recompress = 0;  // re-vote every n decode steps (0 = only after a prefill)
  int beta = 0;        // 0: every layer gets the budget (SnapKV); > 0: PyramidKV's pyramid
};

// SnapKV's option rows (budget, window, kernel, gqa, recompress), PyramidKV's too.
std::vector<PolicyOption> snap_option_rows();
// Those options' values (o's table holds snap_option_rows()); throws fasa::Error for an even
// kernel. beta stays 0.
SnapOptions snap_options(const ParsedOptions& o);
// PyramidKV's budget of global layer `row` of n_layers when the mean budget is k and the vote
// happens at n_visible slots (pyramidkv.cpp; the mean over the layers is exactly k).
int pyramid_layer_budget(int k, int n_visible, int window, int beta, int n_layers, int row);
// `name` is "snapkv" or "pyramidkv" (with o.beta > 0).
std::unique_ptr<AttentionPolicy> make_snap_policy(const PolicyContext& ctx, const SnapOptions& o,
                                                  const std::string& name);

}  // namespace fasa
