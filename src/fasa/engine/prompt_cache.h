// The prompt cache: prefilled prompts kept for later requests that start the same way (the
// server's "one long document, many questions"). An entry is a prompt's tokens, a copy of its
// KV rows after the dense prefill (a `full` session) and, for a prefill-aware policy (SnapKV,
// PyramidKV, H2O), a copy of the policy's prefill statistics. A new session starts from the
// longest usable cached prefix (Session::copy_prefix_from: the rows are copied, the policy's side
// data rebuilt from them) and prefills only the rest, so its output is bit for bit that of a
// session that prefilled everything (dense prefill is chunking-invariant).
//
// What "usable" means (Session::copy_prefix_from and KvCache::can_copy_prefix):
//  - a decode-time policy takes any common prefix; a prefill-aware one only an entry whose whole
//    prompt starts the new one and whose statistics fit it (same policy name and prefill
//    options), since its statistics cover every prefill query of the entry;
//  - the prefix ends on a prefill-chunk boundary, within the rows the entry computed in whole
//    chunks (a token's bits depend on its chunk's length: the AMX tiles take only chunks of at
//    least 16 tokens), and leaves at least two tokens to prefill; or the prompt equals the
//    entry's: then its logits are reused and nothing is prefilled;
//  - on a model with sliding-window layers, the entry wrote at most one prefill chunk past the
//    prefix (its rings hold only the last rows);
//  - FASA-M's tiered cache is never copied: such sessions prefill everything.
// Entries are bounded by a byte budget (their KV rows and statistics) and evicted least recently
// used first. One thread uses a PromptCache (the server's engine thread).
//
// Every entry belongs to a scope (the server's tenant: its caller's API key and the request's
// cache_salt): a session is given only prefixes of its own scope's entries, so neither the
// answer's cached_tokens nor its time tells one scope what another sent. "" is one scope too.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/policy.h"
#include "fasa/engine/session.h"

namespace fasa {

struct PromptCacheStats {
  uint64_t lookups = 0;        // start() calls
  uint64_t hits = 0;           // ... that reused at least one token
  uint64_t tokens_reused = 0;  // prompt tokens not prefilled thanks to the cache
  uint64_t inserts = 0, evictions = 0;
  uint64_t bytes = 0;  // held now (KV rows and statistics of every entry)
  int entries = 0;
};

class PromptCache {
 public:
  // budget_bytes: the most the entries may hold together; 0 disables the cache.
  explicit PromptCache(uint64_t budget_bytes) : budget_(budget_bytes) {}

  // Gives `s` (a fresh session: nothing appended yet) the longest usable cached prefix of
  // `prompt`; returns its length (0: nothing reused, s unchanged). When it equals the prompt's
  // length, s.last_logits() are the prompt's and nothing is left to prefill.
  int start(Session& s, const std::vector<int32_t>& prompt, const std::string& scope = {});
  // Keeps s's state for `prompt`: call right after s prefilled all of it (s.n_past() ==
  // prompt.size()) and before any decode step. Does nothing for a tiered cache, a cache whose
  // rows were freed, a prompt an entry already holds, or an entry over the budget.
  void insert(const Session& s, const std::vector<int32_t>& prompt, const std::string& scope = {});
  // Takes `rows`, a `full` session holding exactly `tokens` (e.g. load_prompt_file's), as an
  // entry of `scope` without copying it (over the budget: dropped).
  void adopt(std::unique_ptr<Session> rows, std::vector<int32_t> tokens,
             const std::string& scope = {});

  const PromptCacheStats& stats() const { return stats_; }
  uint64_t budget_bytes() const { return budget_; }

 private:
  struct Entry {
    std::vector<int32_t> tokens;             // [n] the prompt
    std::string scope;                       // whose prompt it is (only they may reuse it)
    std::unique_ptr<Session> rows;           // `full`, holding the n tokens' rows and logits
    std::unique_ptr<AttentionPolicy> state;  // prefill-aware policies: statistics, else null
    uint64_t bytes = 0;
  };
  // How many tokens of `prompt` entry e can give s (0: none).
  int usable(const Entry& e, const Session& s, const std::vector<int32_t>& prompt) const;
  void keep(Entry e);  // the newest entry, room made for it (over the budget: dropped)
  void make_room(uint64_t bytes);

  uint64_t budget_;
  std::list<Entry> entries_;  // most recently used first
  PromptCacheStats stats_;
};

}  // namespace fasa
