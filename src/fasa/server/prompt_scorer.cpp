#include "fasa/server/prompt_scorer.h"

#include <algorithm>
#include <utility>

#include "fasa/core/error.h"
#include "fasa/model/model.h"

namespace fasa::server {

PromptScorer::PromptScorer(std::shared_ptr<const Model> model, SessionOptions so, PolicyContext ctx,
                           uint64_t budget_bytes)
    : model_(std::move(model)), so_(std::move(so)), ctx_(std::move(ctx)), budget_(budget_bytes) {
  so_.policy = "full";
  so_.external_policy = nullptr;
}

int PromptScorer::usable(const Entry& e, const Session& s, const std::vector<int32_t>& prompt,
                         int top) const {
  if (e.top != top) return 0;
  const size_t m = std::min(e.tokens.size(), prompt.size());
  size_t common = 0;
  while (common < m && e.tokens[common] == prompt[common]) ++common;
  // Row r gives the logprob of token r + 1: taking rows [0, p) and their logprobs needs tokens
  // [0, p] equal. Rows evaluated in whole chunks: [0, whole); the new prompt evaluates
  // prompt.size() - 1 rows.
  const int evaluated = e.rows->n_past();
  const int whole = evaluated / kChunk * kChunk;
  const int p =
      std::min({static_cast<int>(common) - 1, whole, static_cast<int>(prompt.size()) - 1}) /
      kChunk * kChunk;
  if (p <= 0) return 0;
  return s.cache().can_copy_prefix(e.rows->cache(), p) ? p : 0;
}

std::vector<TokenLogprob> PromptScorer::score(const std::vector<int32_t>& prompt, int top,
                                              const std::string& scope) {
  FASA_CHECK(!prompt.empty());
  ++stats_.lookups;
  auto s = std::make_unique<Session>(model_, so_, ctx_);
  auto best = entries_.end();
  int p = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->scope != scope) continue;
    const int n = usable(*it, *s, prompt, top);
    if (n > p) best = it, p = n;  // ties: the most recently used (first)
  }
  std::vector<TokenLogprob> out;
  if (p > 0) {
    s->copy_prefix_from(*best->rows, p, nullptr);
    out.assign(best->logprobs.begin(), best->logprobs.begin() + p);
    entries_.splice(entries_.begin(), entries_, best);
    ++stats_.hits;
    stats_.tokens_reused += static_cast<uint64_t>(p);
  }
  const int n_vocab = model_->config().n_vocab;
  const int n = static_cast<int>(prompt.size());
  for (int i = p; i + 1 < n; i += kChunk) {  // rows [i, i + m): chunks of kChunk from row 0
    const int m = std::min(kChunk, n - 1 - i);
    const std::vector<float> logits =
        s->eval_all(std::vector<int32_t>(prompt.begin() + i, prompt.begin() + i + m), m);
    for (int j = 0; j < m; ++j) {
      out.push_back(token_logprob(logits.data() + static_cast<size_t>(j) * n_vocab, n_vocab,
                                  prompt[i + j + 1], top));
    }
  }
  if (budget_ > 0 && n > 1) {
    Entry e;
    e.tokens = prompt;
    e.scope = scope;
    e.top = top;
    e.logprobs = out;
    e.bytes = s->cache().used_bytes() + prompt.size() * sizeof(int32_t) +
              out.size() * (sizeof(TokenLogprob) + static_cast<size_t>(top) * 8);
    e.rows = std::move(s);
    keep(std::move(e));
  }
  return out;
}

void PromptScorer::keep(Entry e) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {  // the same prompt: the newer
    if (it->tokens == e.tokens && it->top == e.top && it->scope == e.scope) {
      stats_.bytes -= it->bytes;
      entries_.erase(it);
      break;
    }
  }
  if (e.bytes <= budget_) {
    while (!entries_.empty() && stats_.bytes + e.bytes > budget_) {
      stats_.bytes -= entries_.back().bytes;
      entries_.pop_back();
    }
    stats_.bytes += e.bytes;
    entries_.push_front(std::move(e));
  }
  stats_.entries = static_cast<int>(entries_.size());
}

}  // namespace fasa::server
