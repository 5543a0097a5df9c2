// `streaming`: StreamingLLM (Xiao et al., "Efficient Streaming Language Models with Attention
// Sinks", ICLR 2024). Each decode step reads the first `sinks` slots (the attention sinks) and
// the most recent slots, budget in all, shared by the kv-head group. It reads no keys to choose
// and keeps no side data. The slots it skips for good (between the sinks and the recent run) are
// reported (kept_slots) and the session frees their rows, so it holds what an evicting
// StreamingLLM cache of the same size holds.
// Options: budget=B (tokens, or a fraction < 1 of the context), sinks=S (default 8, the paper's
// setting in FASA's comparison).
#include <algorithm>
#include <vector>

#include "fasa/attention/policy_facets.h"
#include "fasa/attention/registry.h"

namespace fasa {

namespace {

class StreamingPolicy final : public AttentionPolicy, public EvictingPolicy {
 public:
  StreamingPolicy(const AttnShape& shape, double budget, int sinks)
      : n_kv_heads_(shape.n_kv_heads),
        budget_(budget),
        sinks_(sinks),
        gone_(static_cast<size_t>(shape.n_layers) * shape.n_kv_heads, 0),
        keep_(gone_.size(), 0) {}
  std::string_view name() const override { return "streaming"; }

  uint64_t evicted_rows() const override {
    uint64_t n = 0;
    for (int g : gone_) n += g;
    return n;
  }

  // Slots [0, keep) are (or may become) sinks; [keep, keep + gone) are gone; the recent run
  // starts after them.
  bool kept_slots(int layer, int kv_head, int* horizon, std::vector<int32_t>* kept) const override {
    const size_t i = static_cast<size_t>(layer) * n_kv_heads_ + kv_head;
    if (gone_[i] == 0) return false;
    *horizon = keep_[i] + gone_[i];
    kept->resize(keep_[i]);
    for (int s = 0; s < keep_[i]; ++s) (*kept)[s] = s;
    return true;
  }

  void select(const AttnQuery& q, Selection& out) override {
    const int n = q.n_visible;
    const int k = resolve_budget(budget_, n);
    int& gone = gone_[static_cast<size_t>(q.layer) * n_kv_heads_ + q.kv_head];
    if (k >= n) {
      gone = 0;
      out.set_all();
      return;
    }
    const int n_sink = std::min(sinks_, k - 1);  // at least the newest slot is recent
    // Skipped for good: the slots between the sinks and the recent run, whose start never moves
    // back. A token budget fixes n_sink once the context exceeds it; a fraction's k (and so
    // n_sink) may still grow up to sinks_, so the slots below sinks_ may be read again.
    const int sink_cap = budget_ >= 1.0 ? n_sink : sinks_;
    gone = std::max(0, n - k + n_sink - std::max(n_sink, sink_cap));
    keep_[static_cast<size_t>(q.layer) * n_kv_heads_ + q.kv_head] = std::max(n_sink, sink_cap);
    out.all = false;
    out.per_head = false;
    out.bytes_read = 0;
    out.slots.resize(k);  // [k] sinks, then the k - n_sink newest slots
    for (int i = 0; i < n_sink; ++i) out.slots[i] = i;
    for (int i = n_sink; i < k; ++i) out.slots[i] = n - k + i;
  }

 private:
  int n_kv_heads_;
  double budget_;
  int sinks_;
  std::vector<int> gone_;  // [n_layers, n_kv_heads] rows evicted for good at the last step
  std::vector<int> keep_;  // [n_layers, n_kv_heads] the sinks' room: slots below it stay
};

}  // namespace

const OptionTable& streaming_options() {
  static const OptionTable t{"streaming",
                             {
                                 kBudgetRow,
                                 {"sinks", OptionType::Count, "S", "8",
                                  "first slots always read (the attention sinks)"},
                             }};
  return t;
}

std::unique_ptr<AttentionPolicy> make_streaming_policy(const PolicyContext& ctx,
                                                       const PolicyOptions& opts) {
  const ParsedOptions o(streaming_options(), opts, ctx.shape);
  return std::make_unique<StreamingPolicy>(ctx.shape, o.budget("budget"), o.count("sinks"));
}

}  // namespace fasa
