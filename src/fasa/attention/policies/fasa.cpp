// `fasa`: Frequency-Aware Sparse Attention (FASA-C). At each decode step, TIP scores every cached
// token with the calibrated dominant frequency chunks of each query head, reading only a packed
// copy of those key dims; FAC then attends exactly over the top-B slots (full K/V rows, original
// positions). Options:
//   calib=PATH (required)  budget=B (required; < 1: fraction of the context)
//   n_tip=X (FCs per head, count or fraction; default 0.25)   gqa=shared|per-head (shared)
//   dense_layers=L1+L2|none (default 0)   sink=S (0)   recent=R (0)
//   variant=c|m (c)   offload_dir=DIR (variant m; default /var/tmp)
//   prefetch=on|off (variant m; off): fetch the next offloaded layer's guessed rows in the
//   background (KvTiering::prefetch; off by default: on the 8B shape it read 2x the bytes for
//   3-6 % hits, docs/BENCHMARKS.md)
//   break_even=on|off (on): variant c attends densely while selecting would read more than
//   kBreakEven of dense attention's bytes (short contexts, budgets near the context); off: always
//   select (variant m always selects: dense would read every row from the file)
//   fcs=calibrated|random|high|low|mass: which FCs TIP uses (default calibrated; random, high
//   and low are the naive choices calibration must beat: seeded random FCs, the highest- or
//   lowest-frequency FCs; mass ranks the FCs by Double Sparsity's statistic from the same
//   calibration, the mean |q.k| share of the FC's two dims, instead of contextual agreement:
//   an ablation that keeps FASA's unit, the RoPE pair, and changes its criterion)
// Sinks and recent tokens count inside the budget. With gqa=shared the group's heads' TIP scores
// are turned into attention shares (softmax at 1/sqrt(head_dim)) and summed per slot, so one row
// set is gathered per kv head. TIP scores only rank tokens; they are never attention weights.
// FASA-C keeps its own packed copy of the dominant key dims next to the full cache. FASA-M asks
// the session for a tiered cache (KvTiering) instead: RAM holds only those packed dims, the other
// K dims and all of V go to a file under offload_dir (dense layers go there whole), and attention
// fetches just the selected rows. Both read the same packed values and select the same slots,
// so their outputs are equal.
// Hybrid stacks (gemma3): only the global layers are FASA's. Sliding-window layers attend over
// their window without a policy, so the policy keeps no state for them (no packed slice, no
// groups), FASA-M never offloads them, and dense_layers may name global layers only.
// The selection itself (TIP over the packed dims, the pick, FASA-M's tiering) is
// ChannelSubsetPolicy (channel_subset.h), which `double-sparsity` shares; this file chooses the
// dims (fasa_head_dims) and parses the options.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "fasa/attention/calibration.h"
#include "fasa/attention/policies/channel_subset.h"
#include "fasa/attention/policies/option_table.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"

namespace fasa {

namespace {

struct FasaOptions {
  ChannelSubsetOptions sel;  // what the selection needs (budget, gqa, dense layers, ...)
  std::string calib_path;
  double n_tip = 0.25;
  std::string fcs = "calibrated";
};

// The dims TIP scores each (global layer, head) with: the FCs `o.fcs` names, n_tip of them, each
// FC's two dims in turn. [n_global * n_heads][2 * n_tip]
std::vector<std::vector<int>> fasa_head_dims(const PolicyContext& ctx, const FasaOptions& o,
                                             const Calibration& c) {
  const AttnShape& shape = ctx.shape;
  const int n_fc = c.n_fc();
  const int n_tip = std::clamp(o.n_tip < 1.0 ? static_cast<int>(std::lround(o.n_tip * n_fc))
                                             : static_cast<int>(o.n_tip),
                               1, n_fc);
  std::vector<std::vector<int>> dims;
  std::vector<int32_t> fc(n_tip);
  for (int l : shape.global_layers()) {
    for (int h = 0; h < shape.n_heads; ++h) {
      if (o.fcs == "calibrated") {
        fc.assign(c.rank(l, h), c.rank(l, h) + n_tip);
      } else if (o.fcs == "mass") {          // the largest summed channel importance first
        const float* ci = c.channels(l, h);  // [head_dim]
        std::vector<int32_t> all(n_fc);
        std::iota(all.begin(), all.end(), 0);
        auto mass = [&](int32_t f) { return ci[c.fcs[f].a] + ci[c.fcs[f].b]; };
        std::stable_sort(all.begin(), all.end(),
                         [&](int32_t x, int32_t y) { return mass(x) > mass(y); });
        fc.assign(all.begin(), all.begin() + n_tip);
      } else if (o.fcs == "high") {  // FC 0 rotates fastest
        std::iota(fc.begin(), fc.end(), 0);
      } else if (o.fcs == "low") {
        std::iota(fc.begin(), fc.end(), n_fc - n_tip);
      } else {  // random, seeded per (layer, head)
        std::vector<int32_t> all(n_fc);
        std::iota(all.begin(), all.end(), 0);
        std::mt19937 rng(static_cast<uint32_t>(l * 7919 + h));
        std::shuffle(all.begin(), all.end(), rng);
        fc.assign(all.begin(), all.begin() + n_tip);
      }
      std::vector<int>& d = dims.emplace_back();
      for (int32_t f : fc) {
        d.push_back(c.fcs[f].a);
        d.push_back(c.fcs[f].b);
      }
    }
  }
  return dims;
}
}  // namespace

const OptionTable& fasa_options() {
  static const OptionTable
      t{"fasa",
        {
            {.key = "calib",
             .type = OptionType::Text,
             .value = "PATH",
             .fallback = nullptr,
             .help = "calibration file from `fasa calibrate`, made for this model file",
             .missing = "needs a calibration file (calib=PATH; make one with `fasa calibrate`)"},
            kBudgetRow,
            {.key = "n_tip",
             .type = OptionType::Number,
             .value = "X",
             .fallback = "0.25",
             .help =
                 "dominant FCs per head that TIP scores with (a count, or a fraction of the FCs)",
             .rule = "be a count of FCs or a fraction in (0, 1)"},
            {"gqa", OptionType::Enum, "shared|per-head", "shared",
             "shared: the heads' TIP softmax shares summed, one list per kv head; per-head: each "
             "query head's own"},
            {"dense_layers", OptionType::LayerSet, "L1+L2|none", "0",
             "global layers attended densely"},
            {"sink", OptionType::Count, "S", "0", "first slots always read (inside the budget)"},
            {"recent", OptionType::Count, "R", "0", "newest slots always read (inside the budget)"},
            {"fcs", OptionType::Enum, "calibrated|random|high|low|mass", "calibrated",
             "which FCs TIP uses: the calibrated ones, or an ablation (seeded random, highest or "
             "lowest frequency, Double Sparsity's channel mass)"},
            {"variant", OptionType::Enum, "c|m", "c",
             "c: FASA-C, the cache in RAM; m: FASA-M, RAM holds the packed dims, a file the rest"},
            {.key = "offload_dir",
             .type = OptionType::Text,
             .value = "DIR",
             .fallback = "/var/tmp",
             .help = "variant m: the directory of the file tier",
             .rule = "name a directory"},
            {"prefetch", OptionType::OnOff, "on|off", "off",
             "variant m: fetch the next offloaded layer's guessed rows in the background"},
            {"break_even", OptionType::OnOff, "on|off", "on",
             "variant c: attend densely while selecting would read more than 0.8 of dense bytes"},
        }};
  return t;
}

std::unique_ptr<AttentionPolicy> make_fasa_policy(const PolicyContext& ctx,
                                                  const PolicyOptions& opts) {
  const ParsedOptions p(fasa_options(), opts, ctx.shape);
  FasaOptions o;
  o.calib_path = p.text("calib");
  o.n_tip = p.number("n_tip");
  o.fcs = p.text("fcs");
  o.sel.budget = p.budget("budget");
  o.sel.per_head = p.text("gqa") == "per-head";
  o.sel.dense_layers = p.layers("dense_layers");
  o.sel.sink = p.count("sink");
  o.sel.recent = p.count("recent");
  o.sel.variant_m = p.text("variant") == "m";
  o.sel.offload_dir = p.text("offload_dir");
  o.sel.prefetch = p.on("prefetch");
  o.sel.break_even = p.on("break_even");
  if (p.given("prefetch") && !o.sel.variant_m) {
    fail("policy 'fasa': prefetch applies to variant m only (add variant=m / --variant m)");
  }
  if (p.given("offload_dir") && !o.sel.variant_m) {
    fail("policy 'fasa': offload_dir applies to variant m only (add variant=m / --variant m)");
  }
  if (o.sel.variant_m) {
    struct stat st {};
    if (::stat(o.sel.offload_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      fail("policy 'fasa': offload directory '{}' does not exist or is not a directory",
           o.sel.offload_dir);
    }
  }
  const Calibration c = load_calibration(o.calib_path);
  check_calibration(c, ctx, o.calib_path);
  if (o.fcs == "mass" && !c.has_channel_importance()) {
    fail(
        "policy 'fasa': fcs=mass needs a calibration with channel importance (format version "
        "3); '{}' predates it: re-run `fasa calibrate`",
        o.calib_path);
  }
  return make_channel_subset_policy("fasa", ctx, std::move(o.sel), fasa_head_dims(ctx, o, c));
}

}  // namespace fasa
