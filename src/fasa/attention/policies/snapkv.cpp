// `snapkv`: SnapKV (Li et al., "SnapKV: LLM Knows What You are Looking for Before Generation",
// NeurIPS 2024). When decoding starts, the last `window` prompt queries (the observation window)
// vote for the older prompt slots: per query head, each window query's softmax attention over
// the slots it sees (causal), summed over the window and read at the slots before the window,
// then 1-D max-pooled (width `kernel`, same padding). With gqa=shared the pooled votes of the
// group's heads are summed into one list per kv head; gqa=per-head keeps each head's own.
//
// Fixed per-step budget B (tokens attended per decode step, the current one included): the vote
// keeps the top B - 1 - window older slots, so the first decode step attends exactly what SnapKV
// with a compressed prompt of max_capacity_prompt = B - 1 attends (the voted slots, the window,
// the current token). SnapKV then grows its cache with every generated token; here the recent
// part (window + generated tokens) slides instead, B - |voted| newest slots, so each step attends
// exactly B. Whatever leaves the recent part, or loses the vote, is evicted for good. With
// B <= window + 1 nothing is voted: the newest B slots. A decode step that follows new prefill
// queries (the first one, or a later turn) votes again over the slots still kept, and so does
// every `recompress`-th decode step when recompress > 0, with the last `window` queries, decode
// ones included; the pooling then runs over the kept slots in slot order (SnapKV's compressed
// cache). Prefill stays dense. Options: budget=B (required), window=32, kernel=7,
// gqa=shared|per-head (shared), recompress=N (0: off).
#include "fasa/attention/policies/snapkv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "fasa/attention/policy_facets.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/attend.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/topk.h"

namespace fasa {

namespace {

// The last `window` queries of one (layer, kv head), prefill and decode ones, in a ring.
struct QueryWindow {
  std::vector<float> q;  // [window, n_group, head_dim] ring
  int count = 0;         // queries held (<= window)
  int next = 0;          // ring row the next query goes to
  int end_slot = 0;      // slot after the newest query held
  // qs: [n_group, head_dim] = `row` floats, the query of `slot`.
  void push(const float* qs, int slot, int window, int row) {
    if (slot != end_slot) count = 0;  // not the next slot: the window starts again
    if (q.empty()) q.resize(static_cast<size_t>(window) * row);
    std::memcpy(q.data() + static_cast<size_t>(next) * row, qs, sizeof(float) * row);
    next = (next + 1) % window;
    count = std::min(count + 1, window);
    end_slot = slot + 1;
  }
  // The i-th oldest query held, i < count: [n_group, head_dim].
  const float* at(int i, int window, int row) const {
    return q.data() + static_cast<size_t>((next - count + i + window) % window) * row;
  }
};

// What one (global layer, kv head) keeps between decode steps. The alive slots are
// voted[j] ∪ [recent_start, n): older slots that won a vote, then a recent run.
struct GroupState {
  QueryWindow win;
  bool pending = false;     // prefill queries arrived since the last vote
  bool voted_once = false;  // a decode step has voted (the first one always does)
  bool evicted = false;     // some slot is gone for good
  int recent_start = 0;
  int offset = 0;      // this layer's budget minus the mean one (pyramidkv), at the vote
  int since_vote = 0;  // decode steps since the last vote
  std::vector<std::vector<int32_t>> voted;  // [1, or n_group with per_head] ascending slots
  int last_n = -1;  // n_visible of the last step, and its selection (repeat calls)
  Selection last;
};

class SnapPolicy final : public AttentionPolicy,
                         public PrefillObserver,
                         public EvictingPolicy,
                         public Rewindable {
 public:
  SnapPolicy(const PolicyContext& ctx, const SnapOptions& o, std::string name)
      : shape_(ctx.shape),
        o_(o),
        name_(std::move(name)),
        layers_(shape_.global_layers()),
        layer_row_(shape_.n_layers, -1) {
    for (size_t i = 0; i < layers_.size(); ++i) layer_row_[layers_[i]] = static_cast<int>(i);
    states_.resize(layers_.size() * shape_.n_kv_heads);
    for (GroupState& st : states_) st.voted.resize(o_.per_head ? shape_.n_group() : 1);
  }

  std::string_view name() const override { return name_; }

  void on_prefill_queries(const KvCache&, int layer, int first_slot, int n_tok,
                          const float* q) override {
    const int ng = shape_.n_group(), row = ng * shape_.head_dim;
    for (int g = 0; g < shape_.n_kv_heads; ++g) {
      GroupState& st = state(layer, g);
      for (int t = std::max(0, n_tok - o_.window); t < n_tok; ++t) {
        st.win.push(q + (static_cast<size_t>(t) * shape_.n_heads + g * ng) * shape_.head_dim,
                    first_slot + t, o_.window, row);
      }
      st.pending = true;
    }
  }

  void copy_prefill_state_from(const AttentionPolicy& src) override {
    const auto* s = dynamic_cast<const SnapPolicy*>(&src);
    if (!s || s->name_ != name_) {
      fail("policy '{}' cannot take the prefill state of policy '{}'", name_, src.name());
    }
    if (s->o_.window != o_.window || s->states_.size() != states_.size()) {
      fail("policy '{}': the source keeps another observation window (window={} here, {} there)",
           name_, o_.window, s->o_.window);
    }
    for (const GroupState& st : s->states_) {
      if (st.last_n >= 0) {
        fail(
            "policy '{}': the source session has decoded already, so its state is no longer "
            "the prefill's",
            name_);
      }
    }
    for (size_t i = 0; i < states_.size(); ++i) {
      states_[i].win = s->states_[i].win;
      states_[i].pending = s->states_[i].pending;
    }
  }

  // Decode steps vote, evict and (recompress) watch their queries: the save point keeps it all.
  void save_point() override { saved_ = states_; }
  void rollback(const KvCache&, int) override {
    FASA_CHECK(saved_.size() == states_.size());
    states_ = saved_;
  }

  uint64_t resident_bytes() const override {
    uint64_t b = 0;
    for (const GroupState& st : states_) {
      b += st.win.q.size() * sizeof(float);
      for (const auto& v : st.voted) b += v.size() * sizeof(int32_t);
    }
    return b;
  }

  // The slots neither voted nor recent, as of each group's last step.
  uint64_t evicted_rows() const override {
    uint64_t n = 0;
    for (const GroupState& st : states_) {
      if (st.last_n >= 0) n += st.last_n - distinct_slots(st.last, shape_.n_group(), st.last_n);
    }
    return n;
  }

  // Below the recent run only the voted slots stay.
  bool kept_slots(int layer, int kv_head, int* horizon, std::vector<int32_t>* kept) const override {
    const GroupState& st =
        states_[static_cast<size_t>(layer_row_[layer]) * shape_.n_kv_heads + kv_head];
    if (!st.evicted) return false;
    *horizon = st.recent_start;
    sorted_union(st.voted, kept);
    return true;
  }

  void select(const AttnQuery& q, Selection& out) override {
    GroupState& st = state(q.layer, q.kv_head);
    const int n = q.n_visible;
    if (n == st.last_n) {  // the same step asked again
      out = st.last;
      return;
    }
    const int k = resolve_budget(o_.budget, n);
    uint64_t bytes = 0;
    if (!st.voted_once || st.pending || (o_.recompress > 0 && st.since_vote >= o_.recompress)) {
      st.offset = layer_budget(k, n, q.layer) - k;
      bytes = vote(q, st, std::clamp(k + st.offset, 1, n));
    }
    const int kl = std::clamp(k + st.offset, 1, n);
    // The voted slots, then the newest ones up to the budget (at least the current slot).
    const int start = std::max(st.recent_start, n - std::max(1, kl - voted_count(st)));
    st.recent_start = start;
    out.all = false;
    out.per_head = o_.per_head;
    if (o_.per_head) out.head_slots.resize(q.n_group);
    for (size_t j = 0; j < st.voted.size(); ++j) {
      std::vector<int32_t>& list = o_.per_head ? out.head_slots[j] : out.slots;
      list = st.voted[j];
      for (int s = start; s < n; ++s) list.push_back(s);
    }
    if (static_cast<int>(out.slots_for(0).size()) < n) st.evicted = true;
    if (!st.evicted) out.set_all();  // nothing gone yet, and every slot fits
    out.bytes_read = bytes;
    st.win.push(q.q, n - 1, o_.window, q.n_group * shape_.head_dim);
    st.since_vote += 1;
    st.last_n = n;
    st.last = out;
  }

 private:
  GroupState& state(int layer, int g) {
    FASA_CHECK(layer_row_[layer] >= 0);  // the driver never asks about a sliding-window layer
    return states_[static_cast<size_t>(layer_row_[layer]) * shape_.n_kv_heads + g];
  }
  static int voted_count(const GroupState& st) { return static_cast<int>(st.voted[0].size()); }

  // The budget of `layer` when the mean over the global layers is k.
  int layer_budget(int k, int n, int layer) const {
    if (o_.beta <= 0) return k;
    return pyramid_layer_budget(k, n, o_.window, o_.beta, static_cast<int>(layers_.size()),
                                layer_row_[layer]);
  }

  // The vote of the window's queries at the step of q (budget kl): replaces st.voted by the
  // winners among the alive slots older than the window. Returns the bytes of keys read.
  uint64_t vote(const AttnQuery& q, GroupState& st, int kl) {
    const int n = q.n_visible, hd = shape_.head_dim, ng = q.n_group;
    // The window's queries sit at slots [n - 1 - w, n - 1), just before the current one.
    const int w = st.win.end_slot == n - 1 ? st.win.count : 0;
    const int s_w = n - 1 - w;
    const int keep = kl - 1 - o_.window;  // older slots the vote keeps
    st.voted_once = true;
    st.pending = false;
    st.since_vote = 0;
    if (keep <= 0 || w == 0) {  // no room (or no queries) for a vote: the newest kl slots
      for (auto& v : st.voted) v.clear();
      return 0;
    }
    const KvRows rows{q.cache->k_rows(q.layer, q.kv_head), q.cache->v_rows(q.layer, q.kv_head),
                      q.cache->type(), hd};
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    struct VoteScratch {
      std::vector<int32_t> alive;          // [n_alive] ascending
      std::vector<int32_t> rows;           // [n_alive] their cache rows (KvCache::rows_of)
      std::vector<float> p, votes, total;  // [n_alive], [n_cand], [n_cand]
    };
    VoteScratch& sc = workspace_object<VoteScratch>();
    auto& alive = sc.alive;
    auto& p = sc.p;
    auto& votes = sc.votes;
    auto& total = sc.total;
    uint64_t bytes = 0;
    for (int j = 0; j < ng; ++j) {
      const size_t list = o_.per_head ? j : 0;
      if (j == 0 || o_.per_head) {  // the alive slots before the current one
        alive = st.voted[list];
        for (int s = st.recent_start; s < n - 1; ++s) alive.push_back(s);
        bytes += alive.size() * q.cache->row_bytes();
        sc.rows.resize(alive.size());
        q.cache->rows_of(q.layer, q.kv_head, alive.data(), static_cast<int>(alive.size()),
                         sc.rows.data());
      }
      const int n_cand =
          static_cast<int>(std::lower_bound(alive.begin(), alive.end(), s_w) - alive.begin());
      votes.assign(n_cand, 0.0f);
      p.resize(alive.size());
      for (int i = 0; i < w; ++i) {  // query i at slot s_w + i sees the alive slots <= it
        const int len =
            static_cast<int>(std::upper_bound(alive.begin(), alive.end(), s_w + i) - alive.begin());
        if (len == 0) continue;
        qk_scores(st.win.at(i, o_.window, ng * hd) + j * hd, rows, sc.rows.data(), len, p.data());
        for (int c = 0; c < len; ++c) p[c] *= scale;
        softmax_inplace(p.data(), len);
        for (int c = 0; c < n_cand; ++c) votes[c] += p[c];
      }
      max_pool(votes, o_.kernel);
      if (o_.per_head) {
        pick(votes.data(), n_cand, keep, alive, st.voted[j]);
        continue;
      }
      if (j == 0) total.assign(n_cand, 0.0f);
      for (int c = 0; c < n_cand; ++c) total[c] += votes[c];
      if (j == ng - 1) pick(total.data(), n_cand, keep, alive, st.voted[0]);
    }
    st.recent_start = std::max(st.recent_start, s_w);
    return bytes;
  }

  // out = the slots of `alive` at the top `keep` scores (ascending). scores: [n_cand]
  static void pick(const float* scores, int n_cand, int keep, const std::vector<int32_t>& alive,
                   std::vector<int32_t>& out) {
    struct PickScratch {
      std::vector<int32_t> top;
    };
    auto& top = workspace_object<PickScratch>().top;
    top_k_indices(scores, n_cand, keep, top);
    out.clear();
    for (int32_t c : top) out.push_back(alive[c]);
  }

  // In place: x[c] = max of x over [c - kernel/2, c + kernel/2] (clipped at the ends).
  static void max_pool(std::vector<float>& x, int kernel) {
    const int n = static_cast<int>(x.size()), r = kernel / 2;
    if (r == 0 || n == 0) return;
    struct PoolScratch {
      std::vector<float> in;
    };
    auto& in = workspace_object<PoolScratch>().in;
    in = x;
    for (int c = 0; c < n; ++c) {
      float m = in[c];
      for (int d = std::max(0, c - r); d <= std::min(n - 1, c + r); ++d) m = std::max(m, in[d]);
      x[c] = m;
    }
  }

  AttnShape shape_;
  SnapOptions o_;
  std::string name_;
  std::vector<int> layers_;         // [n_global] the global layers
  std::vector<int> layer_row_;      // [n_layers] index in layers_, -1 for a sliding-window layer
  std::vector<GroupState> states_;  // [n_global, n_kv_heads]
  std::vector<GroupState> saved_;   // [n_global, n_kv_heads] at save_point()
};

}  // namespace

std::vector<PolicyOption> snap_option_rows() {
  return {
      kBudgetRow,
      {.key = "window",
       .type = OptionType::Whole,
       .value = "W",
       .fallback = "32",
       .help = "observation window: the last W prompt queries vote",
       .lo = 1,
       .hi = 1 << 16},
      {.key = "kernel",
       .type = OptionType::Whole,
       .value = "K",
       .fallback = "7",
       .help = "max-pool width of the votes (odd)",
       .lo = 1,
       .hi = 1 << 12},
      {"gqa", OptionType::Enum, "shared|per-head", "shared",
       "shared: the group's votes summed, one list per kv head; per-head: each head's own"},
      {.key = "recompress",
       .type = OptionType::Whole,
       .value = "N",
       .fallback = "0",
       .help = "vote again every N decode steps (0: only after a prefill)",
       .lo = 0,
       .hi = 1 << 24},
  };
}

SnapOptions snap_options(const ParsedOptions& o) {
  SnapOptions s;
  s.budget = o.budget("budget");
  s.window = o.count("window");
  s.kernel = o.count("kernel");
  s.per_head = o.text("gqa") == "per-head";
  s.recompress = o.count("recompress");
  if (s.kernel % 2 == 0) fail("policy '{}': kernel must be odd (got {})", o.policy(), s.kernel);
  return s;
}

std::unique_ptr<AttentionPolicy> make_snap_policy(const PolicyContext& ctx, const SnapOptions& o,
                                                  const std::string& name) {
  return std::make_unique<SnapPolicy>(ctx, o, name);
}

const OptionTable& snapkv_options() {
  static const OptionTable t{"snapkv", snap_option_rows()};
  return t;
}

std::unique_ptr<AttentionPolicy> make_snapkv_policy(const PolicyContext& ctx,
                                                    const PolicyOptions& opts) {
  return make_snap_policy(ctx, snap_options(ParsedOptions(snapkv_options(), opts, ctx.shape)),
                          "snapkv");
}

}  // namespace fasa
