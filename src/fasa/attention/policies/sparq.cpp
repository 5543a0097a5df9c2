// `sparq`: SparQ Attention (Ribar et al., "SparQ Attention: Bandwidth-Efficient LLM Inference",
// ICML 2024). Per query head, at each decode step:
//   1. the r components of q largest in magnitude (ties: the lower dim) and, over every visible
//      slot, the approximate logits s^_j = sum_{c in those r} q_c K_jc, read from those r key
//      dims only; their softmax at temperature sqrt(head_dim * sum_r |q_c| / sum_all |q_c|)
//      (the paper's correction for the dropped components' share of |q|);
//   2. exact attention of the full query over the top-k slots of s^ (k = the budget, per query
//      head: SparQ is a per-head method and the authors' code repeats K for the group's heads, so
//      selections are per head, Selection::per_head);
//   3. mean-value reallocation: output = alpha * attn_topk + (1 - alpha) * mean_v, alpha = the
//      approximate softmax's mass on the top-k, mean_v = the mean of V over every visible slot,
//      kept as a running sum per (layer, kv head) by on_append. The policy hands alpha and mean_v
//      to the driver as value mixing (Selection::mix_alpha / mix_value). The running sum, the
//      temperature and alpha are value_mean.h's, which `fasa` (mean_value=on) shares.
// Options: budget=B (required; tokens per query head), r=R (default head_dim / 8: the authors'
// reference setting, r = head_dim / compression ratio at their default ratio 8; a count, or a
// fraction < 1 of head_dim), mean_correction=on|off (default on; off ablates step 3).
// The top-k is taken on s^ itself (the softmax is monotone, so it is the same set; ties: the
// lower slot). A budget covering the context is dense, with no mixing (alpha would be 1).
// Cost per decode step per query head: r key dims of every visible slot (bytes_read), an O(n)
// top-k, then k full K/V rows; side data: a running V sum per (layer, kv head), head_dim doubles.
#include <algorithm>
#include <cmath>
#include <vector>

#include "fasa/attention/policies/option_table.h"
#include "fasa/attention/policies/value_mean.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/topk.h"

namespace fasa {

namespace {

// Value c of row t of a K row array of the cache's type, as a float (Q8_0: d * q).
inline float elem(const KvCache& cache, const void* rows, size_t t, int c) {
  return kv_value(static_cast<const uint8_t*>(rows) + t * cache.row_bytes(), cache.type(), c);
}

class SparqPolicy final : public AttentionPolicy, public Rewindable {
 public:
  SparqPolicy(const AttnShape& shape, double budget, int r, bool mean_correction)
      : shape_(shape),
        budget_(budget),
        r_(r),
        mean_correction_(mean_correction),
        layer_row_(shape.n_layers, -1),
        means_(shape) {
    const std::vector<int> global = shape.global_layers();
    for (size_t i = 0; i < global.size(); ++i) layer_row_[global[i]] = static_cast<int>(i);
  }
  std::string_view name() const override { return "sparq"; }

  // The running sum of V (value_mean.h).
  void on_append(const KvCache& cache, int layer, int first_slot, int n) override {
    if (mean_correction_) means_.on_append(cache, layer, first_slot, n);
  }

  // The running sums at the save point (a resum from the cache would cost O(n) per rollback).
  void save_point() override {
    if (mean_correction_) means_.save_point();
  }
  void rollback(const KvCache&, int n) override {
    if (mean_correction_) means_.rollback(n);
  }

  uint64_t resident_bytes() const override {
    return mean_correction_ ? means_.resident_bytes() : 0;
  }

  void select(const AttnQuery& q, Selection& out) override {
    const int n = q.n_visible, hd = shape_.head_dim;
    FASA_CHECK(layer_row_[q.layer] >= 0);  // the driver never asks about a sliding-window layer
    const int k = resolve_budget(budget_, n);
    if (k >= n) {
      out.set_all();
      return;
    }
    const KvCache& cache = *q.cache;
    const void* keys = cache.k_rows(q.layer, q.kv_head);  // [capacity] rows
    out.all = false;
    out.per_head = true;
    // r of the row's head_dim values (Q8_0: their share of the row's bytes)
    out.bytes_read = static_cast<uint64_t>(q.n_group) * n * r_ * cache.row_bytes() / hd;
    out.head_slots.resize(q.n_group);
    if (mean_correction_) {
      out.mix_alpha.assign(q.n_group, 1.0f);
    } else {
      out.mix_alpha.clear();
    }
    struct SparqScratch {
      std::vector<float> absq, logit;  // [head_dim], [n]
      std::vector<int32_t> dims;
    };
    SparqScratch& sc = workspace_object<SparqScratch>();
    auto& absq = sc.absq;
    auto& logit = sc.logit;
    auto& dims = sc.dims;
    absq.resize(hd);
    logit.resize(n);
    for (int j = 0; j < q.n_group; ++j) {
      const float* qh = q.q + static_cast<size_t>(j) * hd;
      for (int c = 0; c < hd; ++c) absq[c] = std::fabs(qh[c]);
      top_k_indices(absq.data(), hd, r_, dims);
      for (int t = 0; t < n; ++t) {
        float s = 0.0f;
        for (int32_t c : dims) s += qh[c] * elem(cache, keys, t, c);
        logit[t] = s;
      }
      top_k_indices(logit.data(), n, k, out.head_slots[j]);
      if (!mean_correction_) continue;
      // alpha: the approximate softmax's mass on the chosen slots.
      const double temp = subset_temperature(qh, dims.data(), static_cast<int>(dims.size()), hd);
      out.mix_alpha[j] = softmax_mass_on(logit.data(), n, temp, out.head_slots[j]);
    }
    if (mean_correction_) out.mix_value = means_.mean(q);
  }

 private:
  AttnShape shape_;
  double budget_;
  int r_;
  bool mean_correction_;
  std::vector<int> layer_row_;  // [n_layers] index among the global layers, -1 sliding-window
  ValueMeans means_;            // the running V sums (mean_correction=on)
};

}  // namespace

const OptionTable& sparq_options() {
  static const OptionTable t{
      "sparq",
      {
          {"budget", OptionType::Budget, "B", nullptr,
           "tokens attended per decode step per query head (< 1: a fraction of the context)"},
          {.key = "r",
           .type = OptionType::Number,
           .value = "R",
           .fallback = "head_dim/8",
           .help =
               "query components that approximate the scores (a count, or a fraction of head_dim)",
           .rule = "be a count of query components in [1, head_dim = {head_dim}] or a fraction < 1 "
                   "of head_dim",
           .computed = true},
          {"mean_correction", OptionType::OnOff, "on|off", "on", "mean-value reallocation"},
      }};
  return t;
}

std::unique_ptr<AttentionPolicy> make_sparq_policy(const PolicyContext& ctx,
                                                   const PolicyOptions& opts) {
  const int hd = ctx.shape.head_dim;
  const ParsedOptions o(sparq_options(), opts, ctx.shape);
  int r = std::max(1, hd / 8);
  if (o.given("r")) {
    const double x = o.number("r");
    if (x > hd) o.fail_rule("r");
    r = x < 1.0 ? std::max(1, static_cast<int>(std::lround(x * hd))) : static_cast<int>(x);
  }
  return std::make_unique<SparqPolicy>(ctx.shape, o.budget("budget"), r, o.on("mean_correction"));
}

}  // namespace fasa
