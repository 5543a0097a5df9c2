// ChannelSubsetPolicy, the token selection FASA and Double Sparsity share (channel_subset.cpp):
// each query head scores every cached token with a fixed, calibrated subset of key channels (dims)
// of its own — FASA: the dim pairs of its dominant frequency chunks; Double Sparsity: its heavy
// channels — read from a packed, column-major copy of the union of its kv-head group's channels
// (kept up to date by on_append; FASA-M's lives in the cache's RAM tier instead). The subset is
// fixed per (layer, head), chosen by the caller; SparQ also scores with a few key dims, but picks
// them per query from |q| and reads them from the cache rows, so it is not this class. The scores only rank tokens: the top-B slots are attended exactly,
// shared by the group (each head's scores turned into softmax shares at 1/sqrt(head_dim), summed
// per slot) or per query head. Sinks and recent slots are taken first, inside the budget.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fasa/attention/policies/packed_slice.h"
#include "fasa/attention/policy.h"

namespace fasa {

struct ChannelSubsetOptions {
  double budget = 0.0;         // resolve_budget semantics
  bool per_head = false;       // gqa=per-head
  std::set<int> dense_layers;  // global layers attended densely
  int sink = 0;
  int recent = 0;
  bool variant_m = false;  // FASA-M: the packed dims in RAM, the rest in a file tier
  std::string offload_dir = "/var/tmp";
  bool prefetch = false;  // variant m: KvTiering::prefetch
  // variant m: rows per (layer, kv head) of the RAM row cache (KvTiering::cache_rows); < 0: the
  // default, twice the rows one step selects (the budget, times the group for gqa=per-head).
  int row_cache = -1;
  bool break_even = true;  // fasa: dense below the break-even length (fasa.cpp)
  // Per-layer budgets: [n_layers] each global layer's share of the budget, mean 1 over the
  // selecting (global, not dense) layers; empty: every layer gets the budget (layer_budget).
  std::vector<double> layer_weight;
  // SparQ-style mean-value correction (value_mean.h): alpha = the selected slots' share of the
  // softmax of each head's TIP scores at SparQ's temperature for its scoring dims. Not with
  // variant m or candidate lists (the caller refuses those).
  bool mean_value = false;
  // How the packed slice stores its values (packed_slice.h). Variant m with auto: the cache's
  // RAM tier is the slice; with another store the policy keeps it and the file whole rows.
  SliceFormat slice = SliceFormat::Auto;
};

// Slots `layer` attends out of n visible: resolve_budget(o.budget, n) = B, or with
// o.layer_weight the layer's share of the selecting layers' total (their count x B), by largest
// remainder (ties: the lower layer), at least 1. So the budgets of the selecting layers sum to
// exactly their count x B.
int layer_budget(const ChannelSubsetOptions& o, int layer, int n);

// head_dims: [n_global * n_heads] (the global layers ascending, then the query heads) the key
// dims each head scores with, in the order its terms are summed. `name` is the policy's name().
std::unique_ptr<AttentionPolicy> make_channel_subset_policy(
    std::string name, const PolicyContext& ctx, ChannelSubsetOptions o,
    const std::vector<std::vector<int>>& head_dims);

}  // namespace fasa
