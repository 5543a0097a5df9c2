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
//      to the driver as value mixing (Selection::mix_alpha / mix_value).
// Options: budget=B (required; tokens per query head), r=R (default head_dim / 8: the authors'
// reference setting, r = head_dim / compression ratio at their default ratio 8; a count, or a
// fraction < 1 of head_dim), mean_correction=on|off (default on; off ablates step 3).
// The top-k is taken on s^ itself (the softmax is monotone, so it is the same set; ties: the
// lower slot). A budget covering the context is dense, with no mixing (alpha would be 1).
// Cost per decode step per query head: r key dims of every visible slot (bytes_read), an O(n)
// top-k, then k full K/V rows; side data: a running V sum per (layer, kv head), head_dim doubles.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "fasa/attention/policies/option_table.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/topk.h"

namespace fasa {

namespace {

// Value c of row t of a K or V row array of the cache's type, as a float (Q8_0: d * q).
inline float elem(const KvCache& cache, const void* rows, size_t t, int c) {
  return kv_value(static_cast<const uint8_t*>(rows) + t * cache.row_bytes(), cache.type(), c);
}

class SparqPolicy final : public AttentionPolicy {
 public:
  SparqPolicy(const AttnShape& shape, double budget, int r, bool mean_correction)
      : shape_(shape),
        budget_(budget),
        r_(r),
        mean_correction_(mean_correction),
        layer_row_(shape.n_layers, -1) {
    const std::vector<int> global = shape.global_layers();
    for (size_t i = 0; i < global.size(); ++i) layer_row_[global[i]] = static_cast<int>(i);
    groups_.resize(global.size() * shape.n_kv_heads);
  }
  std::string_view name() const override { return "sparq"; }

  // The running sum of V over slots [0, n_summed). Appends continue it; a range that does not
  // start where the sum ends (a rewrite) resums the earlier slots from the cache.
  void on_append(const KvCache& cache, int layer, int first_slot, int n) override {
    if (layer_row_[layer] < 0 || !mean_correction_) return;
    for (int g = 0; g < shape_.n_kv_heads; ++g) {
      Group& gr = group(layer, g);
      if (first_slot != gr.n_summed) {
        gr.v_sum.assign(shape_.head_dim, 0.0);
        gr.n_summed = 0;
        add_values(cache, layer, g, 0, first_slot, gr);
      }
      add_values(cache, layer, g, first_slot, first_slot + n, gr);
    }
  }

  // The running sums at the save point (a resum from the cache would cost O(n) per rollback).
  void save_point() override {
    saved_.resize(groups_.size());
    for (size_t i = 0; i < groups_.size(); ++i) {
      saved_[i] = {groups_[i].v_sum, groups_[i].n_summed};
    }
  }
  void rollback(const KvCache&, int n) override {
    FASA_CHECK(saved_.size() == groups_.size());
    for (size_t i = 0; i < groups_.size(); ++i) {
      groups_[i].v_sum = saved_[i].first;
      groups_[i].n_summed = saved_[i].second;
      FASA_CHECK(groups_[i].n_summed <= n || !mean_correction_);
    }
  }

  uint64_t resident_bytes() const override {
    return mean_correction_ ? groups_.size() * shape_.head_dim * sizeof(double) : 0;
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
      double sum_all = 0.0, sum_r = 0.0;
      for (int c = 0; c < hd; ++c) {
        absq[c] = std::fabs(qh[c]);
        sum_all += absq[c];
      }
      top_k_indices(absq.data(), hd, r_, dims);
      for (int32_t c : dims) sum_r += absq[c];
      for (int t = 0; t < n; ++t) {
        float s = 0.0f;
        for (int32_t c : dims) s += qh[c] * elem(cache, keys, t, c);
        logit[t] = s;
      }
      top_k_indices(logit.data(), n, k, out.head_slots[j]);
      if (!mean_correction_) continue;
      // alpha: the approximate softmax's mass on the chosen slots.
      const double temp = sum_all > 0.0 ? std::sqrt(hd * sum_r / sum_all) : 1.0;
      const float inv = static_cast<float>(1.0 / temp);
      for (int t = 0; t < n; ++t) logit[t] *= inv;
      softmax_inplace(logit.data(), n);
      double alpha = 0.0;
      for (int32_t t : out.head_slots[j]) alpha += logit[t];
      out.mix_alpha[j] = static_cast<float>(std::min(alpha, 1.0));
    }
    if (mean_correction_) out.mix_value = mean_value(q);
  }

 private:
  struct Group {
    std::vector<double> v_sum;  // [head_dim] sum of V over slots [0, n_summed)
    int n_summed = 0;
    std::vector<float> mean;  // [head_dim] the last select's mean (mix_value points here)
  };
  Group& group(int layer, int g) {
    return groups_[static_cast<size_t>(layer_row_[layer]) * shape_.n_kv_heads + g];
  }

  void add_values(const KvCache& cache, int layer, int g, int s0, int s1, Group& gr) const {
    const int hd = shape_.head_dim;
    const void* v = cache.v_rows(layer, g);  // [capacity] rows
    if (gr.v_sum.size() != static_cast<size_t>(hd)) gr.v_sum.assign(hd, 0.0);
    for (int s = s0; s < s1; ++s) {
      for (int c = 0; c < hd; ++c) gr.v_sum[c] += elem(cache, v, s, c);
    }
    gr.n_summed = std::max(gr.n_summed, s1);
  }

  // Mean of V over the visible slots: the running sum (which covers exactly them at a decode
  // step), or, should it not, a sum from the cache.
  const float* mean_value(const AttnQuery& q) {
    const int hd = shape_.head_dim, n = q.n_visible;
    Group& gr = group(q.layer, q.kv_head);
    gr.mean.resize(hd);
    if (gr.n_summed == n && gr.v_sum.size() == static_cast<size_t>(hd)) {
      for (int c = 0; c < hd; ++c) gr.mean[c] = static_cast<float>(gr.v_sum[c] / n);
      return gr.mean.data();
    }
    Group fresh;
    add_values(*q.cache, q.layer, q.kv_head, 0, n, fresh);
    for (int c = 0; c < hd; ++c) gr.mean[c] = static_cast<float>(fresh.v_sum[c] / n);
    return gr.mean.data();
  }

  AttnShape shape_;
  double budget_;
  int r_;
  bool mean_correction_;
  std::vector<int> layer_row_;  // [n_layers] index among the global layers, -1 sliding-window
  std::vector<Group> groups_;   // [n_global, n_kv_heads]
  std::vector<std::pair<std::vector<double>, int>> saved_;  // [n_global, n_kv_heads] save point
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
