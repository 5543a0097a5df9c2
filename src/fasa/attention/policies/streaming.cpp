// `streaming`: StreamingLLM (Xiao et al., "Efficient Streaming Language Models with Attention
// Sinks", ICLR 2024). Each decode step reads the first `sinks` slots (the attention sinks) and
// the most recent slots, budget in all, shared by the kv-head group. It reads no keys to choose
// and keeps no side data; the slots it skips stay in the cache (the cache does not compact), so
// its output equals an evicting StreamingLLM cache of the same size, and it reports them as
// evicted (evicted_rows) so that resident counts leave them out.
// Options: budget=B (tokens, or a fraction < 1 of the context), sinks=S (default 8, the paper's
// setting in FASA's comparison).
#include <algorithm>
#include <vector>

#include "fasa/attention/registry.h"

namespace fasa {

namespace {

class StreamingPolicy final : public AttentionPolicy {
 public:
  StreamingPolicy(const AttnShape& shape, double budget, int sinks)
      : n_kv_heads_(shape.n_kv_heads),
        budget_(budget),
        sinks_(sinks),
        gone_(static_cast<size_t>(shape.n_layers) * shape.n_kv_heads, 0) {}
  std::string_view name() const override { return "streaming"; }

  uint64_t evicted_rows() const override {
    uint64_t n = 0;
    for (int g : gone_) n += g;
    return n;
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
