// `double-sparsity`: Double Sparsity (Yang, Sheng, Gonzalez, Stoica, Zheng, "Post-Training Sparse
// Attention with Double Sparsity", arXiv 2408.07092, 2024). Channel sparsity finds the tokens,
// token sparsity attends to them: each query head scores every cached token with its R heavy
// channels only (q_c * K_tc summed over those key dims, read from a "label cache": a packed copy
// of the channels of every key), and exact attention reads the top-B slots.
//
// The heavy channels are calibrated offline, per (layer, query head), by the same `fasa calibrate`
// run (same command, same text) that calibrates FASA: a channel's importance is the mean of
// |q_c * k_c| over the calibration queries, each paired with its own token's key, both after RoPE
// (the authors' offline calibration ranks channels by that statistic of the post-RoPE q and k).
// Options:
//   calib=PATH|auto|online (a calibration of format version >= 3; auto: the stored one, else
//   online: the channel statistic measured on the prompt itself, online_calibrated.h)
//   calib_window=W (online; 32)   calib_spread=P (online; 0)   calib_refresh=R (online; 0)
//   budget=B (required)
//   channels=R (heavy channels per head; default 2 x FASA's default n_tip FCs, so both policies
//     read the same key bytes per token: one FC is a pair of dims, so n_tip FCs = 2 n_tip dims)
//   gqa=shared|per-head (shared)   dense_layers=L1+L2|none (default 0, as for `fasa`)
// The label cache, the scoring kernel, the GQA handling and the pick are FASA's
// (ChannelSubsetPolicy, channel_subset.h): per kv head the union of its query heads' channels is packed column-major; `shared` sums the
// heads' softmax shares per slot. The authors keep the label cache in 4 bits; here it holds the
// keys' own values (the cache's element type), like FASA's packed slice, so the comparison is of
// the channel choice alone; slice=q4 stores it in 4 bits as they do (packed_slice.h).
// Cost per decode step per kv-head group: the packed channels of every visible slot (bytes_read,
// = n x |union| x element size), an O(n) top-k, then B K/V rows; side data: the label cache.
#include <algorithm>
#include <cmath>

#include "fasa/attention/calibration.h"
#include "fasa/attention/calibration_store.h"
#include "fasa/attention/policies/channel_subset.h"
#include "fasa/attention/policies/online_calibrated.h"
#include "fasa/attention/policies/option_table.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"

namespace fasa {

namespace {

// FASA's default n_tip (0.25 of the FCs, as fasa.cpp resolves it) in dims: 2 per FC.
int default_channels(int head_dim) {
  const int n_fc = head_dim / 2;
  return 2 * std::clamp(static_cast<int>(std::lround(0.25 * n_fc)), 1, n_fc);
}

}  // namespace

const OptionTable& double_sparsity_options() {
  static const OptionTable
      t{"double-sparsity",
        {
            kCalibRow,
            kCalibWindowRow,
            kCalibSpreadRow,
            kCalibRefreshRow,
            kBudgetRow,
            {.key = "channels",
             .type = OptionType::Count,
             .value = "R",
             .fallback = "2 × FASA's default n_tip",
             .help = "heavy channels per head, in [1, head_dim]",
             .computed = true},
            {"gqa", OptionType::Enum, "shared|per-head", "shared",
             "shared: the heads' softmax shares summed, one list per kv head; per-head: each query "
             "head's own"},
            {"dense_layers", OptionType::LayerSet, "L1+L2|none", "0",
             "global layers attended densely"},
            kSliceRow,
        }};
  return t;
}

std::unique_ptr<AttentionPolicy> make_double_sparsity_policy(const PolicyContext& ctx,
                                                             const PolicyOptions& opts) {
  const int hd = ctx.shape.head_dim;
  const ParsedOptions p(double_sparsity_options(), opts, ctx.shape);
  const std::string calib_path = resolve_calibration(p.text("calib"), ctx, "double-sparsity");
  ChannelSubsetOptions o;
  o.budget = p.budget("budget");
  o.per_head = p.text("gqa") == "per-head";
  o.dense_layers = p.layers("dense_layers");
  o.slice = parse_slice_format(p.text("slice"));
  int channels = default_channels(hd);
  if (p.given("channels")) {
    channels = p.count("channels");
    if (channels < 1 || channels > hd) {
      fail("policy 'double-sparsity': channels must be in [1, head_dim = {}] (got '{}')", hd,
           opts.at("channels"));
    }
  }
  auto make = [ctx, o, channels](const Calibration& c) -> std::unique_ptr<AttentionPolicy> {
    std::vector<std::vector<int>> head_dims;  // [n_global * n_heads][channels], heaviest first
    for (int l : ctx.shape.global_layers()) {
      for (int h = 0; h < ctx.shape.n_heads; ++h) {
        head_dims.push_back(c.heavy_channels(l, h, channels));
      }
    }
    return make_channel_subset_policy("double-sparsity", ctx, o, head_dims);
  };
  if (calib_path == "online") {
    OnlineCalibrationSpec spec;
    spec.window = p.count("calib_window");
    spec.spread = p.count("calib_spread");
    spec.refresh = p.count("calib_refresh");
    spec.agreement = false;  // channel importance only
    return make_online_calibrated_policy("double-sparsity", ctx, spec, make);
  }
  for (const char* key : {"calib_window", "calib_spread", "calib_refresh"}) {
    if (p.given(key)) {
      fail("policy 'double-sparsity': {} applies to calib=online only (calib is '{}')", key,
           calib_path);
    }
  }
  const Calibration c = load_calibration(calib_path);
  check_calibration(c, ctx, calib_path);
  if (!c.has_channel_importance()) {
    fail(
        "calibration '{}' predates Double Sparsity's channel statistics (format version < 3): "
        "re-calibrate with `fasa calibrate` (the same command and text; the new file serves "
        "both fasa and double-sparsity)",
        calib_path);
  }
  return make(c);
}

}  // namespace fasa
