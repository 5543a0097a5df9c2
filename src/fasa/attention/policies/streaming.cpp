// `streaming`: StreamingLLM (Xiao et al., "Efficient Streaming Language Models with Attention
// Sinks", ICLR 2024). Each decode step reads the first `sinks` slots (the attention sinks) and
// the most recent slots, budget in all, shared by the kv-head group. It reads no keys to choose
// and keeps no side data; the slots it skips stay in the cache (this engine never evicts), so
// its output equals an evicting StreamingLLM cache of the same size.
// Options: budget=B (tokens, or a fraction < 1 of the context), sinks=S (default 8, the paper's
// setting in FASA's comparison).
#include <algorithm>

#include "fasa/attention/registry.h"
#include "fasa/core/error.h"

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

std::unique_ptr<AttentionPolicy> make_streaming_policy(const PolicyContext&,
                                                       const PolicyOptions& opts) {
  double budget = 0.0;
  bool have_budget = false;
  int sinks = 8;
  for (const auto& [key, value] : opts) {
    if (key == "budget") {
      budget = parse_budget("streaming", value);
      have_budget = true;
    } else if (key == "sinks") {
      const bool digits = !value.empty() && value.size() <= 7 &&
                          std::all_of(value.begin(), value.end(),
                                      [](char ch) { return ch >= '0' && ch <= '9'; });
      if (!digits) fail("policy 'streaming': sinks must be a whole number >= 0 (got '{}')", value);
      sinks = std::stoi(value);
    } else {
      fail("policy 'streaming' has no option '{}' (options: budget, sinks)", key);
    }
  }
  if (!have_budget) {
    fail("policy 'streaming' needs a budget (e.g. --policy streaming:budget=256)");
  }
  return std::make_unique<StreamingPolicy>(budget, sinks);
}

}  // namespace fasa
