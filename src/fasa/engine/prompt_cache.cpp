#include "fasa/engine/prompt_cache.h"

#include <algorithm>
#include <string>

#include "fasa/attention/prefill_observers.h"
#include "fasa/core/error.h"

namespace fasa {

namespace {

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// Rows [0, full_rows) of an L-token prompt prefilled in chunks of C (prefill_chunk_size) were
// computed in chunks of exactly C tokens, as every longer prompt's are: a token's bits depend
// on its chunk's length (the AMX tiles take chunks of at least kAmxMinTokens, matmul.h), so
// only those rows, and a prefix ending on a chunk boundary, equal an uncached run's.
int full_rows(int L, int C) {
  const int q = L / C, r = L % C;
  return C * (r == 1 && q >= 1 ? q - 1 : q);  // L = qC + 1 ends in chunks of C - 1 and 2
}

bool same_layout(const Session& a, const Session& b) {
  const SessionOptions &x = a.options(), &y = b.options();
  return a.n_ctx() == b.n_ctx() && x.kv_type == y.kv_type && x.prefill_chunk == y.prefill_chunk;
}

}  // namespace

int PromptCache::usable(const Entry& e, const Session& s,
                        const std::vector<int32_t>& prompt) const {
  if (!same_layout(*e.rows, s)) return 0;
  const int n_entry = static_cast<int>(e.tokens.size()), len = static_cast<int>(prompt.size());
  const int common = static_cast<int>(common_prefix(e.tokens, prompt));
  const bool whole = common == n_entry && common == len;  // the same prompt: logits too
  if (s.options().external_policy) return 0;
  if (s.cache().tiered()) return 0;
  const int chunk = s.options().prefill_chunk;
  int n = whole ? len : std::min({common, len - 2, full_rows(n_entry, chunk)}) / chunk * chunk;
  if (n <= 0) return 0;
  if (s.facets().needs_prefill_queries()) {
    // Every prefill query of the entry went into its statistics: all of it or nothing.
    if (n != n_entry || !e.state) return 0;
    if (!prefill_state_source(*e.state, s.policy().name())) return 0;
  }
  return s.cache().can_copy_prefix(e.rows->cache(), n) ? n : 0;
}

int PromptCache::start(Session& s, const std::vector<int32_t>& prompt, const std::string& scope) {
  ++stats_.lookups;
  if (budget_ == 0 || s.n_past() != 0) return 0;
  auto best = entries_.end();
  int best_n = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->scope != scope) continue;
    const int n = usable(*it, s, prompt);
    if (n > best_n) best = it, best_n = n;  // ties: the most recently used (first)
  }
  if (best_n == 0) return 0;
  try {
    s.copy_prefix_from(*best->rows, best_n, best->state.get());
  } catch (const Error&) {  // statistics of other prefill options (another window): prefill
    return 0;
  }
  entries_.splice(entries_.begin(), entries_, best);
  ++stats_.hits;
  stats_.tokens_reused += best_n;
  return best_n;
}

void PromptCache::insert(const Session& s, const std::vector<int32_t>& prompt,
                         const std::string& scope) {
  if (budget_ == 0 || prompt.empty() || s.n_past() != static_cast<int>(prompt.size())) return;
  if (s.cache().tiered() || s.cache().any_evicted() || s.options().external_policy) return;
  const bool wants = s.facets().prefill != nullptr;
  for (const Entry& e : entries_) {
    if (e.scope == scope && e.tokens == prompt && (e.state || !wants) && same_layout(*e.rows, s))
      return;  // held
  }
  Entry e;
  e.tokens = prompt;
  e.scope = scope;
  SessionOptions so = s.options();
  so.policy = "full";
  so.free_evicted_rows = false;
  e.rows = std::make_unique<Session>(s.model_ptr(), so, s.policy_ctx());
  e.rows->copy_prefix_from(s);
  if (wants) {
    std::string name;
    PolicyOptions opts;
    parse_policy_spec(s.options().policy, &name, &opts);
    e.state = make_policy(name, s.policy_ctx(), opts);
    if (auto* o = facet<PrefillObserver>(*e.state)) o->copy_prefill_state_from(s.policy());
  }
  e.bytes = e.rows->cache().used_bytes() + (e.state ? e.state->resident_bytes() : 0);
  keep(std::move(e));
}

void PromptCache::adopt(std::unique_ptr<Session> rows, std::vector<int32_t> tokens,
                        const std::string& scope) {
  FASA_CHECK(rows && rows->n_past() == static_cast<int>(tokens.size()) && !rows->facets().prefill);
  Entry e;
  e.tokens = std::move(tokens);
  e.scope = scope;
  e.rows = std::move(rows);
  e.bytes = e.rows->cache().used_bytes();
  keep(std::move(e));
}

void PromptCache::keep(Entry e) {
  if (budget_ == 0 || e.bytes > budget_) return;
  make_room(e.bytes);
  stats_.bytes += e.bytes;
  ++stats_.inserts;
  entries_.push_front(std::move(e));
  stats_.entries = static_cast<int>(entries_.size());
}

void PromptCache::make_room(uint64_t bytes) {
  while (!entries_.empty() && stats_.bytes + bytes > budget_) {
    stats_.bytes -= entries_.back().bytes;
    entries_.pop_back();
    ++stats_.evictions;
  }
  stats_.entries = static_cast<int>(entries_.size());
}

}  // namespace fasa
