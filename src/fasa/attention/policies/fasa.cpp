// `fasa`: Frequency-Aware Sparse Attention (FASA-C). At each decode step, TIP scores every cached
// token with the calibrated dominant frequency chunks of each query head, reading only a packed
// copy of those key dims; FAC then attends exactly over the top-B slots (full K/V rows, original
// positions). Options:
//   calib=PATH|auto|online (auto, the default: the stored one, calibration_store.h, else online;
//   online: calibrated on the prompt itself, online_calibrated.h)   calib_window=W (online: the
//   prompt positions whose queries calibrate; default 32)   calib_spread=P (online: up to P
//   more queries spread evenly over the whole prompt; default 0)   calib_refresh=R (online:
//   calibrate again every R decode steps from the newest queries; default 0, never)
//   calib_keys=S (online: the keys
//   the compound greedy samples per query; default 512, 0: every key)
//   budget=B (required; < 1: fraction of the context)
//   n_tip=X (FCs per head, count or fraction; default 0.25)   gqa=shared|per-head (shared)
//   dense_layers=L1+L2|none (default 0)   sink=S (0)   recent=R (0)
//   variant=c|m (c)   offload_dir=DIR (variant m; default /var/tmp)
//   prefetch=on|off (variant m; off): read in the background the budget / 4 rows ranked just
//   past the budget, for the layer's next step (KvTiering::prefetch, Selection::next)
//   row_cache=N (variant m; default twice the rows a step selects): rows per (layer, kv head)
//   of the RAM cache of recently read file-tier rows (KvRowCache); 0: none
//   break_even=on|off (on): variant c attends densely while selecting would read more than
//   kBreakEven of dense attention's bytes (short contexts, budgets near the context); off: always
//   select (variant m always selects: dense would read every row from the file)
//   fcs=compound|calibrated|random|high|low|mass: which FCs TIP uses. compound (the default
//   since issue 23, chosen on held-in texts: docs/RESULTS.md and
//   docs/notebook/selection_quality/default_selector.md) takes the calibration's greedy
//   compound CA order: the FCs chosen jointly for the agreement of their summed logits with the
//   full head (the paper measures a set by this compound CA but ranks FCs one by one); beyond
//   the calibration's n_compound FCs, the other FCs by mean CA. calibrated ranks FCs by their
//   own mean CA (the paper's selector, method=paper). random, high and low are the naive
//   choices calibration must beat (seeded random FCs, the highest- or lowest-frequency FCs);
//   mass ranks the FCs by Double Sparsity's statistic from the same calibration, the mean |q.k|
//   share of the FC's two dims: an ablation that keeps FASA's unit and changes its criterion
//   fc_sets=group|head (group): group: the kv-head group's query heads share one set of n_tip
//   FCs, ranked by the group's mean statistic (compound: the group's own greedy set), so the
//   packed slice holds n_tip FCs per kv head instead of the union of the heads' sets
//   mean_value=on|off (on for variant c, off for m): SparQ's mean-value correction
//   (value_mean.h), alpha from the TIP scores' softmax at SparQ's temperature for the head's
//   scoring dims
//   The defaults fcs=compound, fc_sets=group, mean_value=on were chosen in issue 23 on held-in
//   texts at equal KV bytes read (docs/notebook/selection_quality/default_selector.md,
//   "Choosing the default selector"); before,
//   they were calibrated, head, off (method=paper keeps those).
//   slice=auto|f16|q8|q4 (auto): how the packed slice stores its values (packed_slice.h: the
//   cache's own, fp16, or int8 / int4 codes with one fp16 scale per dim and 32 slots). Variant m
//   with auto keeps the slice as the cache's RAM tier (the file holds the other K dims and V);
//   with f16, q8 or q4 the policy keeps the slice in RAM and the file holds whole K and V rows
//   (a lossy slice cannot stand in for the dims attention reads)
//   layer_budget=uniform|calibrated (uniform): calibrated spreads the same total over the
//   selecting layers by their compound CA at n_tip (fasa_fcs.h: less agreement, more budget)
//   method=default|paper (default): paper fixes the paper's selector (fcs=calibrated,
//   fc_sets=head, layer_budget=uniform, sink=0, recent=0, mean_value=off) whatever the
//   defaults; giving one of those options another value with it is an error
// Sinks and recent tokens count inside the budget. With gqa=shared the group's heads' TIP scores
// are turned into attention shares (softmax at 1/sqrt(head_dim)) and summed per slot, so one row
// set is gathered per kv head. TIP scores only rank tokens; they are never attention weights.
// FASA-C keeps its own packed copy of the dominant key dims next to the full cache. FASA-M asks
// the session for a tiered cache (KvTiering) instead: RAM holds only the packed dims (dense
// layers stay whole in RAM), the rest goes to a file under offload_dir, and attention fetches
// just the selected rows. Both read the same packed values and select the same slots, so their
// outputs are equal.
// Hybrid stacks (gemma3): only the global layers are FASA's. Sliding-window layers attend over
// their window without a policy, so the policy keeps no state for them (no packed slice, no
// groups), FASA-M never offloads them, and dense_layers may name global layers only.
// The selection itself (TIP over the packed dims, the pick, FASA-M's tiering) is
// ChannelSubsetPolicy (channel_subset.h), which `double-sparsity` shares; fasa_fcs.h chooses the
// dims (fasa_head_dims) and the layer weights; this file parses and checks the options.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fasa/attention/calibration.h"
#include "fasa/attention/calibration_store.h"
#include "fasa/attention/policies/channel_subset.h"
#include "fasa/attention/policies/fasa_fcs.h"
#include "fasa/attention/policies/online_calibrated.h"
#include "fasa/attention/policies/option_table.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"

namespace fasa {

namespace {

// method=paper: each option it fixes and the paper's value (the defaults before issue 23).
struct PaperValue {
  const char* key;
  const char* value;
};
constexpr PaperValue kPaperMethod[] = {{"fcs", "calibrated"},
                                       {"fc_sets", "head"},
                                       {"layer_budget", "uniform"},
                                       {"sink", "0"},
                                       {"recent", "0"},
                                       {"mean_value", "off"}};

// The value of `key` as given or defaulted, in the words of kPaperMethod.
std::string given_value(const ParsedOptions& p, const char* key) {
  const std::string k = key;
  if (k == "sink" || k == "recent") return std::to_string(p.count(k));
  if (k == "mean_value") return p.on(k) ? "on" : "off";
  return p.text(k);
}

// The value the policy uses for `key`: with method=paper, the paper's (whatever the default;
// another value given is an error), otherwise as given or defaulted.
std::string chosen_value(const ParsedOptions& p, const char* key) {
  if (p.text("method") == "paper") {
    for (const PaperValue& v : kPaperMethod) {
      if (std::string(v.key) != key) continue;
      if (p.given(key) && given_value(p, key) != v.value) {
        fail("policy 'fasa': method=paper fixes {}={} (got {}={}); drop one of them", key, v.value,
             key, given_value(p, key));
      }
      return v.value;
    }
  }
  return given_value(p, key);
}

// n_tip as a count of FCs: a count, or a fraction of the FCs (rounded), clamped to [1, n_fc].
int n_tip_count(double n_tip, int n_fc) {
  return std::clamp(n_tip < 1.0 ? static_cast<int>(std::lround(n_tip * n_fc))
                                : static_cast<int>(n_tip),
                    1, n_fc);
}

// What the calibration must hold for the options; a clear error otherwise.
void check_calibration_serves(const Calibration& c, const FcChoice& ch, bool fcs_given,
                              bool calibrated_budget, const std::string& path) {
  if (ch.fcs == "mass" && !c.has_channel_importance()) {
    fail(
        "policy 'fasa': fcs=mass needs a calibration with channel importance (format version "
        "3); '{}' predates it: re-run `fasa calibrate`",
        path);
  }
  const char* need = ch.fcs == "compound" ? "fcs=compound"
                     : calibrated_budget  ? "layer_budget=calibrated"
                                          : nullptr;
  if (!need) return;
  if (!c.has_compound()) {
    fail(
        "policy 'fasa': {}{} needs a calibration with compound CA sets (format version 4); '{}' "
        "predates them: re-run `fasa calibrate`{}",
        need, fcs_given || ch.fcs != "compound" ? "" : " (the default selector)", path,
        ch.fcs == "compound" ? ", or add fcs=calibrated (the paper's selector, method=paper)" : "");
  }
  // layer_budget=calibrated reads the compound CA at n_tip; fcs=compound alone takes the other
  // FCs by CA past the greedy set.
  if (calibrated_budget && ch.n_tip > c.n_compound) {
    fail(
        "policy 'fasa': layer_budget=calibrated with n_tip {} needs compound sets of at least {} "
        "FCs; '{}' has {}: re-run `fasa calibrate --compound {}`",
        ch.n_tip, ch.n_tip, path, c.n_compound, ch.n_tip);
  }
}

// Options that apply to one variant only, and variant m's directory.
void check_variant_options(const ParsedOptions& p, const ChannelSubsetOptions& sel) {
  if (p.given("prefetch") && !sel.variant_m) {
    fail("policy 'fasa': prefetch applies to variant m only (add variant=m / --variant m)");
  }
  if (p.given("row_cache") && !sel.variant_m) {
    fail("policy 'fasa': row_cache applies to variant m only (add variant=m / --variant m)");
  }
  if (p.given("offload_dir") && !sel.variant_m) {
    fail("policy 'fasa': offload_dir applies to variant m only (add variant=m / --variant m)");
  }
  if (sel.mean_value && sel.variant_m) {
    fail(
        "policy 'fasa': mean_value=on applies to variant c only (variant m keeps V in its file "
        "tier)");
  }
  if (sel.variant_m) {
    struct stat st {};
    if (::stat(sel.offload_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      fail("policy 'fasa': offload directory '{}' does not exist or is not a directory",
           sel.offload_dir);
    }
  }
}

}  // namespace

const OptionTable& fasa_options() {
  static const OptionTable
      t{"fasa",
        {
            kCalibRow,
            kCalibWindowRow,
            kCalibSpreadRow,
            kCalibRefreshRow,
            kCalibKeysRow,
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
            {"fcs", OptionType::Enum, "compound|calibrated|random|high|low|mass", "compound",
             "which FCs TIP uses: the greedy compound CA set (needs a version-4 calibration), "
             "the FCs by their own mean CA (the paper's), or an ablation (seeded random, "
             "highest or lowest frequency, Double Sparsity's channel mass)"},
            {"fc_sets", OptionType::Enum, "group|head", "group",
             "head: each query head its own FCs (the slice holds their union); group: the "
             "kv-head group's heads share n_tip FCs"},
            {"mean_value", OptionType::OnOff, "on|off", "on",
             "SparQ's mean-value correction with the TIP scores' softmax (variant c; off by "
             "default with variant m)"},
            {"layer_budget", OptionType::Enum, "uniform|calibrated", "uniform",
             "calibrated: the same total budget spread over layers by their compound CA"},
            {"method", OptionType::Enum, "default|paper", "default",
             "paper: the paper's selector, whatever the defaults (fixes fcs, fc_sets, "
             "layer_budget, sink, recent, mean_value)"},
            {"variant", OptionType::Enum, "c|m", "c",
             "c: FASA-C, the cache in RAM; m: FASA-M, RAM holds the packed dims, a file the rest"},
            {.key = "offload_dir",
             .type = OptionType::Text,
             .value = "DIR",
             .fallback = "/var/tmp",
             .help = "variant m: the directory of the file tier",
             .rule = "name a directory"},
            {"prefetch", OptionType::OnOff, "on|off", "off",
             "variant m: read in the background the rows ranked just past the budget (budget / "
             "4) for the layer's next step"},
            {.key = "row_cache",
             .type = OptionType::Whole,
             .value = "N",
             .fallback = "2 x budget",
             .help = "variant m: rows per (layer, kv head) of the RAM cache of recently read "
                     "file-tier rows; decode reads from the file only the others (0: none)",
             .lo = 0,
             .hi = 1 << 24,
             .computed = true},
            {"break_even", OptionType::OnOff, "on|off", "on",
             "variant c: attend densely while selecting would read more than 0.8 of dense bytes"},
            kSliceRow,
        }};
  return t;
}

std::unique_ptr<AttentionPolicy> make_fasa_policy(const PolicyContext& ctx,
                                                  const PolicyOptions& opts) {
  const ParsedOptions p(fasa_options(), opts, ctx.shape);
  for (const PaperValue& v : kPaperMethod) chosen_value(p, v.key);  // conflicts fail first
  ChannelSubsetOptions sel;
  const std::string calib = resolve_calibration(p.text("calib"), ctx, "fasa");
  sel.budget = p.budget("budget");
  sel.per_head = p.text("gqa") == "per-head";
  sel.dense_layers = p.layers("dense_layers");
  sel.sink = std::stoi(chosen_value(p, "sink"));
  sel.recent = std::stoi(chosen_value(p, "recent"));
  sel.variant_m = p.text("variant") == "m";
  sel.offload_dir = p.text("offload_dir");
  sel.prefetch = p.on("prefetch");
  if (p.given("row_cache")) sel.row_cache = p.count("row_cache");
  sel.break_even = p.on("break_even");
  sel.slice = parse_slice_format(p.text("slice"));
  // mean_value is on by default for variant c; variant m keeps V in its file tier: off there
  // unless asked for (which check_variant_options refuses).
  sel.mean_value =
      chosen_value(p, "mean_value") == "on" && (p.given("mean_value") || !sel.variant_m);
  check_variant_options(p, sel);
  FcChoice ch;
  ch.fcs = chosen_value(p, "fcs");
  ch.per_group = chosen_value(p, "fc_sets") == "group";
  const double n_tip = p.number("n_tip");
  const bool calibrated_budget = chosen_value(p, "layer_budget") == "calibrated";
  const bool fcs_given = p.given("fcs");
  const bool online = calib == "online";
  const std::string label = online ? "online" : calib;  // how errors name the calibration
  // The policy for a calibration (a file's, or the one made online).
  auto make = [ctx, sel, ch, n_tip, calibrated_budget, fcs_given,
               label](const Calibration& c) -> std::unique_ptr<AttentionPolicy> {
    FcChoice chc = ch;
    chc.n_tip = n_tip_count(n_tip, c.n_fc());
    check_calibration_serves(c, chc, fcs_given, calibrated_budget, label);
    ChannelSubsetOptions o = sel;
    if (calibrated_budget) {
      o.layer_weight = calibrated_layer_weights(ctx.shape, c, chc.n_tip, o.dense_layers);
    }
    return make_channel_subset_policy("fasa", ctx, std::move(o), fasa_head_dims(ctx.shape, chc, c));
  };
  if (!online) {
    for (const char* key : {"calib_window", "calib_spread", "calib_refresh", "calib_keys"}) {
      if (p.given(key)) {
        fail("policy 'fasa': {} applies to calib=online only (calib is '{}')", key, calib);
      }
    }
    const Calibration c = load_calibration(calib);
    check_calibration(c, ctx, calib);
    return make(c);
  }
  if (sel.variant_m) {
    fail(
        "policy 'fasa': calib=online does not serve variant m (the tiered cache fixes the key "
        "dims kept in RAM before the prefill that calibrates): give a calibration file or "
        "calib=auto with one stored (`fasa calibrate`)");
  }
  OnlineCalibrationSpec spec;
  spec.window = p.count("calib_window");
  spec.spread = p.count("calib_spread");
  spec.refresh = p.count("calib_refresh");
  spec.key_sample = p.count("calib_keys");
  const int n_fc = static_cast<int>(
      fc_dims(ctx.rope_layout, FcLayout::Rope, ctx.shape.head_dim, ctx.rope_dim).size());
  const bool compound = ch.fcs == "compound" || calibrated_budget;
  spec.n_compound = compound ? n_tip_count(n_tip, n_fc) : 0;
  spec.head_sets = (ch.fcs == "compound" && !ch.per_group) || calibrated_budget;
  return make_online_calibrated_policy("fasa", ctx, spec, make);
}

}  // namespace fasa
