// `streaming`: StreamingLLM (Xiao et al., "Efficient Streaming Language Models with Attention
// Sinks", ICLR 2024). Each decode step reads the first `sinks` slots (the attention sinks) and
// the most recent slots, budget in all, shared by the kv-head group. It reads no keys to choose
// and keeps no side data; the slots it skips stay in the cache (this engine never evicts), so
// its output equals an evicting StreamingLLM cache of the same size.
// Options: budget=B (tokens, or a fraction < 1 of the context), sinks=S (default 8, the paper's
// setting in FASA's comparison).
#include <algorithm>

#include "fasa/attention/registry.h"

namespace fasa {

namespace {

class StreamingPolicy final : public AttentionPolicy {
 public:
  StreamingPolicy(double budget, int sinks) : budget_(budget), sinks_(sinks) {}
  std::string_view name() const override { return "streaming"; }

  void select(const AttnQuery& q, Selection& out) override {
    const int n = q.n_visible;
    const int k = resolve_budget(budget_, n);
    if (k >= n) {
      out.set_all();
      return;
    }
    const int n_sink = std::min(sinks_, k - 1);  // at least the newest slot is recent
    out.all = false;
    out.per_head = false;
    out.bytes_read = 0;
    out.slots.resize(k);  // [k] sinks, then the k - n_sink newest slots
    for (int i = 0; i < n_sink; ++i) out.slots[i] = i;
    for (int i = n_sink; i < k; ++i) out.slots[i] = n - k + i;
  }

 private:
  double budget_;
  int sinks_;
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
  return std::make_unique<StreamingPolicy>(o.budget("budget"), o.count("sinks"));
}

}  // namespace fasa
