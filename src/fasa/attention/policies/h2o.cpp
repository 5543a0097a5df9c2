// `h2o`: H2O (Zhang et al., "H2O: Heavy-Hitter Oracle for Efficient Generative Inference of
// Large Language Models", NeurIPS 2023). Every slot accumulates the attention it receives, per
// query head: over the dense prefill (each prompt query's causal softmax, computed here from the
// prefill queries) and then at every decode step over the slots attended (the driver's
// probabilities, on_probs). A decode step keeps at most B slots: the newest `recent` fraction of
// B (at least the current token) and the heavy hitters, the rest of the kept slots with the
// largest accumulated scores (gqa=shared: summed over the group's heads, one list per kv head;
// per-head: each head's own). What is dropped is evicted for good: it is never attended again,
// so its score stops growing, and it is never chosen again. Options: budget=B (required),
// recent=R (0.5, a fraction of B), gqa=shared|per-head (shared).
// Deviations from the paper: prefill is dense (H2O's own code also scores the prompt with full
// attention and evicts from the first generated token on); a step chooses its B slots before it
// attends (H2O appends the new token, attends B + 1, then evicts one using this step's scores too),
// so each step attends exactly B and the newest step's attention counts from the next step on.
#include <algorithm>
#include <cmath>
#include <vector>

#include "fasa/attention/policies/option_table.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/attend.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/topk.h"

namespace fasa {

namespace {

// One (global layer, kv head): the slots still kept, per list (one shared, or one per head).
struct KeptState {
  std::vector<std::vector<int32_t>> alive;  // [1 or n_group] ascending
  int seen = 0;                             // slots [0, seen) have been added to the lists
  bool evicted = false;                     // some slot is gone for good
  int last_n = -1;  // n_visible of the last step, and its selection (repeat calls)
  Selection last;
};

class H2oPolicy final : public AttentionPolicy,
                        public ProbabilityObserver,
                        public PrefillObserver,
                        public EvictingPolicy,
                        public Rewindable {
 public:
  H2oPolicy(const PolicyContext& ctx, double budget, double recent, bool per_head)
      : shape_(ctx.shape),
        budget_(budget),
        recent_(recent),
        per_head_(per_head),
        layers_(shape_.global_layers()),
        layer_row_(shape_.n_layers, -1) {
    for (size_t i = 0; i < layers_.size(); ++i) layer_row_[layers_[i]] = static_cast<int>(i);
    score_.resize(layers_.size() * shape_.n_heads);
    kept_.resize(layers_.size() * shape_.n_kv_heads);
    for (KeptState& k : kept_) k.alive.resize(per_head_ ? shape_.n_group() : 1);
  }

  std::string_view name() const override { return "h2o"; }

  void on_append(const KvCache& cache, int layer, int first_slot, int n) override {
    for (int h = 0; h < shape_.n_heads; ++h) {
      std::vector<float>& s = score(layer, h);
      if (s.empty()) s.assign(cache.capacity(), 0.0f);
    }
    n_slots_ = std::max(n_slots_, first_slot + n);
  }

  // Each prompt query's causal softmax, added to its head's scores (token order, so chunking does
  // not change a bit). O(n_tok * slots * head_dim) per head. After rows were freed (a prompt
  // that follows decode steps) the query sees what the attention saw: the kept slots below the
  // cache's eviction horizon, then every slot from it on.
  void on_prefill_queries(const KvCache& cache, int layer, int first_slot, int n_tok,
                          const float* q) override {
    const int hd = shape_.head_dim, ng = shape_.n_group();
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    parallel_for(shape_.n_heads, [&](int64_t h) {
      const int g = static_cast<int>(h) / ng;
      const KvRows rows{cache.k_rows(layer, g), cache.v_rows(layer, g), cache.type(), hd};
      std::vector<float>& s = score(layer, static_cast<int>(h));
      struct ProbScratch {
        std::vector<float> p;            // [slots seen by the query]
        std::vector<int32_t> slot, row;  // [slots seen by the last query] when rows were freed
      };
      ProbScratch& sc = workspace_object<ProbScratch>();
      const bool freed = cache.evicted(layer, g);
      if (freed) {
        sc.slot = cache.kept(layer, g);
        for (int i = cache.evict_horizon(layer, g); i < first_slot + n_tok; ++i) {
          sc.slot.push_back(i);
        }
        sc.row.resize(sc.slot.size());
        cache.rows_of(layer, g, sc.slot.data(), static_cast<int>(sc.slot.size()), sc.row.data());
      }
      const int hidden = freed ? first_slot + n_tok - static_cast<int>(sc.slot.size()) : 0;
      for (int t = 0; t < n_tok; ++t) {
        const int len = first_slot + t + 1 - hidden;
        sc.p.resize(len);
        qk_scores(q + (static_cast<size_t>(t) * shape_.n_heads + h) * hd, rows,
                  freed ? sc.row.data() : nullptr, len, sc.p.data());
        for (int j = 0; j < len; ++j) sc.p[j] *= scale;
        softmax_inplace(sc.p.data(), len);
        for (int j = 0; j < len; ++j) s[freed ? sc.slot[j] : j] += sc.p[j];
      }
    });
  }

  void on_probs(int layer, int head, const Selection& sel, const float* probs, int n) override {
    std::vector<float>& s = score(layer, head);
    const int32_t* list = sel.all ? nullptr : sel.slots_for(head % shape_.n_group()).data();
    for (int i = 0; i < n; ++i) s[list ? list[i] : i] += probs[i];
  }

  void copy_prefill_state_from(const AttentionPolicy& src) override {
    const auto* s = dynamic_cast<const H2oPolicy*>(&src);
    if (!s) fail("policy 'h2o' cannot take the prefill state of policy '{}'", src.name());
    for (const KeptState& k : s->kept_) {
      if (k.last_n >= 0) {
        fail(
            "policy 'h2o': the source session has decoded already, so its scores are no longer "
            "the prefill's");
      }
    }
    FASA_CHECK(s->score_.size() == score_.size());
    score_ = s->score_;
  }

  // Decode steps add to the scores and evict: the save point keeps the scores of the slots
  // written so far and the kept lists (slots written later have no score before they are).
  void save_point() override {
    saved_n_ = n_slots_;
    saved_score_.resize(score_.size());
    for (size_t i = 0; i < score_.size(); ++i) {
      saved_score_[i].assign(score_[i].begin(),
                             score_[i].begin() + std::min<size_t>(score_[i].size(), n_slots_));
    }
    saved_kept_ = kept_;
  }
  void rollback(const KvCache&, int n) override {
    FASA_CHECK(n == saved_n_ && saved_score_.size() == score_.size());
    for (size_t i = 0; i < score_.size(); ++i) {
      std::vector<float>& s = score_[i];
      std::copy(saved_score_[i].begin(), saved_score_[i].end(), s.begin());
      std::fill(s.begin() + std::min<size_t>(s.size(), n),
                s.begin() + std::min<size_t>(s.size(), n_slots_), 0.0f);
    }
    kept_ = saved_kept_;
    n_slots_ = n;
  }

  uint64_t resident_bytes() const override {
    uint64_t b = static_cast<uint64_t>(n_slots_) * score_.size() * sizeof(float);
    for (const KeptState& k : kept_) {
      for (const auto& a : k.alive) b += a.size() * sizeof(int32_t);
    }
    return b;
  }

  // The slots no list keeps any more, as of each group's last step.
  uint64_t evicted_rows() const override {
    uint64_t n = 0;
    for (const KeptState& k : kept_) {
      if (k.last_n >= 0) n += k.last_n - distinct_slots(k.last, shape_.n_group(), k.last_n);
    }
    return n;
  }

  // Every slot seen that no list keeps is gone.
  bool kept_slots(int layer, int kv_head, int* horizon,
                  std::vector<int32_t>* kept_out) const override {
    const KeptState& st =
        kept_[static_cast<size_t>(layer_row_[layer]) * shape_.n_kv_heads + kv_head];
    if (!st.evicted) return false;
    *horizon = st.seen;
    sorted_union(st.alive, kept_out);
    return true;
  }

  void select(const AttnQuery& q, Selection& out) override {
    KeptState& st = kept(q.layer, q.kv_head);
    const int n = q.n_visible;
    if (n == st.last_n) {  // the same step asked again
      out = st.last;
      return;
    }
    const int k = resolve_budget(budget_, n);
    const int n_recent = std::clamp(static_cast<int>(std::lround(recent_ * k)), 1, k);
    out.all = false;
    out.per_head = per_head_;
    out.bytes_read = 0;
    if (per_head_) out.head_slots.resize(q.n_group);
    for (size_t j = 0; j < st.alive.size(); ++j) {
      std::vector<int32_t>& alive = st.alive[j];
      for (int s = st.seen; s < n; ++s) alive.push_back(s);
      if (static_cast<int>(alive.size()) > k) {
        out.bytes_read += evict(q, static_cast<int>(j), k, n_recent, alive);
        st.evicted = true;
      }
      (per_head_ ? out.head_slots[j] : out.slots) = alive;
    }
    st.seen = n;
    if (!st.evicted) out.set_all();  // nothing gone yet: every slot
    st.last_n = n;
    st.last = out;
  }

 private:
  std::vector<float>& score(int layer, int head) {
    return score_[static_cast<size_t>(layer_row_[layer]) * shape_.n_heads + head];
  }
  KeptState& kept(int layer, int g) {
    FASA_CHECK(layer_row_[layer] >= 0);  // the driver never asks about a sliding-window layer
    return kept_[static_cast<size_t>(layer_row_[layer]) * shape_.n_kv_heads + g];
  }

  // Keeps the newest n_recent alive slots and the k - n_recent best-scoring others of list j.
  // Returns the bytes of scores read.
  uint64_t evict(const AttnQuery& q, int j, int k, int n_recent, std::vector<int32_t>& alive) {
    const int n_old = static_cast<int>(alive.size()) - n_recent;
    struct EvictScratch {
      std::vector<float> mass;  // [n_old]
      std::vector<int32_t> top;
    };
    EvictScratch& sc = workspace_object<EvictScratch>();
    auto& mass = sc.mass;
    auto& top = sc.top;
    mass.assign(n_old, 0.0f);
    const int h0 = q.kv_head * q.n_group;
    const int first = per_head_ ? j : 0, last = per_head_ ? j + 1 : q.n_group;
    for (int i = first; i < last; ++i) {
      const std::vector<float>& s = score(q.layer, h0 + i);
      for (int c = 0; c < n_old; ++c) mass[c] += s[alive[c]];
    }
    top_k_indices(mass.data(), n_old, k - n_recent, top);
    size_t w = 0;
    for (int32_t c : top) alive[w++] = alive[c];  // ascending, c >= w
    for (int c = n_old; c < static_cast<int>(alive.size()); ++c) alive[w++] = alive[c];
    alive.resize(w);
    return static_cast<uint64_t>(n_old) * (last - first) * sizeof(float);
  }

  AttnShape shape_;
  double budget_, recent_;
  bool per_head_;
  std::vector<int> layers_;     // [n_global] the global layers
  std::vector<int> layer_row_;  // [n_layers] index in layers_, -1 for a sliding-window layer
  int n_slots_ = 0;
  std::vector<std::vector<float>> score_;  // [n_global * n_heads][capacity] accumulated attention
  std::vector<KeptState> kept_;            // [n_global * n_kv_heads]
  // save_point(): n_slots_, each score vector's first n_slots_ values, the kept lists.
  int saved_n_ = 0;
  std::vector<std::vector<float>> saved_score_;  // [n_global * n_heads][saved_n_]
  std::vector<KeptState> saved_kept_;
};

}  // namespace

const OptionTable& h2o_options() {
  static const OptionTable
      t{"h2o",
        {
            kBudgetRow,
            {.key = "recent",
             .type = OptionType::Fraction,
             .value = "R",
             .fallback = "0.5",
             .help = "the newest slots' share of the budget (the rest: heavy hitters)",
             .rule = "be a fraction of the budget in [0, 1]"},
            {"gqa", OptionType::Enum, "shared|per-head", "shared",
             "shared: the group's scores summed, one list per kv head; per-head: each head's own"},
        }};
  return t;
}

std::unique_ptr<AttentionPolicy> make_h2o_policy(const PolicyContext& ctx,
                                                 const PolicyOptions& opts) {
  const ParsedOptions o(h2o_options(), opts, ctx.shape);
  return std::make_unique<H2oPolicy>(ctx, o.budget("budget"), o.number("recent"),
                                     o.text("gqa") == "per-head");
}

}  // namespace fasa
