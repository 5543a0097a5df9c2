// `pyramidkv`: PyramidKV (Cai et al., "PyramidKV: Dynamic KV Cache Compression based on
// Pyramidal Information Funneling", arXiv 2406.02069, 2024). SnapKV's observation-window votes
// (snapkv.cpp, same options and the same fixed per-step mapping), with a per-layer budget that
// falls linearly from the bottom global layer to the top one. With the voted part of the mean
// budget v = B - 1 - window (SnapKV's max_capacity_prompt - window, max_capacity_prompt = B - 1)
// and a prompt of P tokens, as the authors' code (PyramidKVCluster.update_kv in
// github.com/Zefan-Cai/PyramidKV, pyramidkv/pyramidkv_utils.py) computes it:
//   P < 2v: every layer gets v (uniform, like SnapKV);
//   else lo = floor(v / beta), hi = 2v - lo; if hi >= P - window: hi = P - window, lo = 2v - hi;
//   layer l of L gets hi - (hi - lo) l / (L - 1) voted slots.
// The authors floor the step (hi - lo) / (L - 1), which leaves the mean a little above v; here
// the line is rounded so that the total is exactly L v (floors, the remainder one slot each to
// the layers with the largest fractions), so the mean budget over the global layers is exactly
// B, and each layer gets at least window + 1. Hybrid stacks: the pyramid runs over the global
// layers. Options: snapkv's (budget=B required, window=32, kernel=7, gqa, recompress) and
// beta=20 (the paper's default).
#include <algorithm>
#include <numeric>
#include <vector>

#include "fasa/attention/policies/snapkv.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"

namespace fasa {

int pyramid_layer_budget(int k, int n_visible, int window, int beta, int n_layers, int row) {
  const int v = k - 1 - window;  // the mean voted part
  const int prompt = n_visible - 1;
  if (v <= 0 || n_layers == 1 || prompt < 2 * v) return k;
  int lo = v / beta, hi = 2 * v - lo;
  if (hi >= prompt - window) {
    hi = prompt - window;
    lo = 2 * v - hi;
  }
  // Layer l: lo + (hi - lo) (L - 1 - l) / (L - 1), floored; the remainder goes to the largest
  // fractions (ties: the lower layer).
  const int64_t span = hi - lo, d = n_layers - 1;
  std::vector<int> b(n_layers);
  std::vector<int64_t> frac(n_layers);
  int64_t total = 0;
  for (int l = 0; l < n_layers; ++l) {
    b[l] = lo + static_cast<int>(span * (d - l) / d);
    frac[l] = span * (d - l) % d;
    total += b[l];
  }
  std::vector<int> order(n_layers);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return frac[a] > frac[c]; });
  for (int64_t r = 0; r < int64_t{n_layers} * v - total; ++r) b[order[r]] += 1;
  return b[row] + window + 1;
}

const OptionTable& pyramidkv_options() {
  static const OptionTable t = [] {
    OptionTable t{"pyramidkv", snap_option_rows()};
    t.rows.push_back({.key = "beta",
                      .type = OptionType::Whole,
                      .value = "β",
                      .fallback = "20",
                      .help = "the top layer votes ⌊v/β⌋ slots, v the mean voted part",
                      .lo = 1,
                      .hi = 1 << 20});
    return t;
  }();
  return t;
}

std::unique_ptr<AttentionPolicy> make_pyramidkv_policy(const PolicyContext& ctx,
                                                       const PolicyOptions& opts) {
  const ParsedOptions p(pyramidkv_options(), opts, ctx.shape);
  SnapOptions o = snap_options(p);
  o.beta = p.count("beta");
  return make_snap_policy(ctx, o, "pyramidkv");
}

}  // namespace fasa
