// `oracle`: exact top-B of the full attention logits at every decode step — the upper bound
// every sparse policy is measured against. Options: budget=B (tokens, or a fraction < 1 of the
// context), gqa=shared|per-head. `shared` ranks slots by the attention mass the group's query
// heads give them (sum of per-head softmax probabilities); `per-head` ranks per query head.
#include <cmath>
#include <vector>

#include "fasa/attention/registry.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/attend.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/topk.h"

namespace fasa {

namespace {

class OraclePolicy final : public AttentionPolicy {
 public:
  OraclePolicy(double budget, bool per_head) : budget_(budget), per_head_(per_head) {}
  std::string_view name() const override { return "oracle"; }

  void select(const AttnQuery& q, Selection& out) override {
    const int n = q.n_visible;
    const int k = resolve_budget(budget_, n);
    if (k >= n) {
      out.set_all();
      return;
    }
    const int hd = q.cache->shape().head_dim;
    const KvRows rows{q.cache->k_rows(q.layer, q.kv_head), q.cache->v_rows(q.layer, q.kv_head),
                      q.cache->type(), hd};
    struct OracleScratch {
      std::vector<float> logits, mass;  // [n]
    };
    OracleScratch& sc = workspace_object<OracleScratch>();
    auto& logits = sc.logits;
    auto& mass = sc.mass;
    logits.resize(n);
    out.all = false;
    out.per_head = per_head_;
    out.bytes_read = static_cast<uint64_t>(n) * q.cache->row_bytes();  // every key
    if (per_head_) {
      out.head_slots.resize(q.n_group);
      for (int g = 0; g < q.n_group; ++g) {
        qk_scores(q.q + g * hd, rows, nullptr, n, logits.data());
        top_k_indices(logits.data(), n, k, out.head_slots[g]);
      }
      return;
    }
    mass.assign(n, 0.0f);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (int g = 0; g < q.n_group; ++g) {
      qk_scores(q.q + g * hd, rows, nullptr, n, logits.data());
      for (int j = 0; j < n; ++j) logits[j] *= scale;
      softmax_inplace(logits.data(), n);
      for (int j = 0; j < n; ++j) mass[j] += logits[j];
    }
    top_k_indices(mass.data(), n, k, out.slots);
  }

 private:
  double budget_;
  bool per_head_;
};

}  // namespace

const OptionTable& oracle_options() {
  static const OptionTable t{"oracle",
                             {
                                 kBudgetRow,
                                 {"gqa", OptionType::Enum, "shared|per-head", "shared",
                                  "shared: rank slots by the group's attention mass; per-head: "
                                  "each query head's own top-B"},
                             }};
  return t;
}

std::unique_ptr<AttentionPolicy> make_oracle_policy(const PolicyContext& ctx,
                                                    const PolicyOptions& opts) {
  const ParsedOptions o(oracle_options(), opts, ctx.shape);
  return std::make_unique<OraclePolicy>(o.budget("budget"), o.text("gqa") == "per-head");
}

}  // namespace fasa
