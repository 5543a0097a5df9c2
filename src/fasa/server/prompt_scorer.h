// Echo with logprobs (lm-eval's log-likelihood requests): each prompt token's log-probability
// under the model given the tokens before it, from a dense evaluation in chunks of kChunk tokens
// (a chunk's logits are [chunk, n_vocab]). Prefill is dense for every policy, so these are the
// policy's too.
//
// Scored prompts are kept: their KV rows (the session that scored them, moved, not copied) and
// their logprobs, under a byte budget, least recently used evicted first. A prompt that starts
// like a kept one (lm-eval sends one context with each of its continuations) evaluates only the
// rest. Reuse is bit-exact: a row's bits depend on the length of the chunk it was evaluated in
// (the AMX tiles take chunks of at least 16 tokens, kernels/matmul.h), so only rows the kept
// prompt evaluated in whole chunks of kChunk are taken, up to a chunk boundary, and the new
// prompt evaluates the same chunks after it as it would alone. Sessions have the server's
// context (the same RoPE tables as its generations), so every entry has the same layout.
// Entries belong to a scope (the caller's, engine/prompt_cache.h): a prompt reuses only its own
// scope's, so how long scoring takes tells no one what another scope sent.
// One thread at a time (the server holds a lock around score()).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "fasa/engine/generate.h"
#include "fasa/engine/session.h"

namespace fasa::server {

struct PromptScorerStats {
  uint64_t lookups = 0;        // prompts scored
  uint64_t hits = 0;           // ... that reused a kept prefix
  uint64_t tokens_reused = 0;  // prompt tokens not evaluated thanks to it
  uint64_t bytes = 0;          // held now (KV rows and logprobs)
  int entries = 0;
};

class PromptScorer {
 public:
  static constexpr int kChunk = 32;

  // `so`: the server's session options (its n_ctx and KV type; the policy is always `full`);
  // budget_bytes: the most the kept prompts may hold (0: none kept).
  PromptScorer(std::shared_ptr<const Model> model, SessionOptions so, PolicyContext ctx,
               uint64_t budget_bytes);

  // [prompt.size() - 1]: entry i is prompt[i + 1]'s logprob given prompt[0..i], with the `top`
  // most likely tokens (token_logprob). prompt: at least one token, fewer than the context.
  std::vector<TokenLogprob> score(const std::vector<int32_t>& prompt, int top,
                                  const std::string& scope = {});

  const PromptScorerStats& stats() const { return stats_; }

 private:
  struct Entry {
    std::vector<int32_t> tokens;         // [n] the prompt
    std::string scope;                   // whose prompt it is
    int top = 0;                         // the alternatives its logprobs hold
    std::unique_ptr<Session> rows;       // `full`, holding the n - 1 evaluated rows
    std::vector<TokenLogprob> logprobs;  // [n - 1]
    uint64_t bytes = 0;
  };
  // How many leading rows of e a prompt may take (a multiple of kChunk; 0: none).
  int usable(const Entry& e, const Session& s, const std::vector<int32_t>& prompt, int top) const;
  void keep(Entry e);

  std::shared_ptr<const Model> model_;
  SessionOptions so_;
  PolicyContext ctx_;
  uint64_t budget_;
  std::list<Entry> entries_;  // most recently used first
  PromptScorerStats stats_;
};

}  // namespace fasa::server
