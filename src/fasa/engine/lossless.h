// Lossless decoding (`--lossless K`): the session's sparse policy drafts K tokens with ordinary
// decode steps; they are taken back (Session::rollback) and one batched forward with full
// attention (Session::verify) gives the exact logits after each of them. Greedy: the longest
// prefix of drafts equal to full attention's argmax is kept, then full attention's own next
// token. Temperature > 0: speculative sampling (Leviathan et al., 2023; Chen et al., 2023):
// draft d with draft probability p(d) is kept with probability min(1, q(d) / p(d)), q the full
// attention distribution after the same sampler filters; on the first rejection the token is
// drawn from max(0, q - p) renormalized, and after K kept drafts one more from q. Either way the
// output has exactly full attention's distribution (greedy: its tokens), whatever the policy.
// Every kept row of the cache is the verification's (dense) row, so the cache, and every policy's
// state built from it, is what a run that never drafted would hold.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fasa/engine/generate.h"
#include "fasa/engine/lossless_options.h"
#include "fasa/engine/sampler.h"
#include "fasa/engine/session.h"

namespace fasa {

struct LosslessStats {
  int64_t verifications = 0;  // batched full-attention forwards
  int64_t drafted = 0;        // draft tokens proposed
  int64_t accepted = 0;       // of those, kept
  int64_t tokens = 0;         // tokens generated (kept drafts + one per verification, + the first)
  uint64_t draft_kv_bytes = 0;   // KV bytes the draft steps read (AttnStats::bytes_read)
  uint64_t verify_kv_bytes = 0;  // KV bytes the verifications read (every cached K/V row once)
  double draft_ms = 0.0, verify_ms = 0.0;
  double acceptance() const { return drafted ? static_cast<double>(accepted) / drafted : 0.0; }
  double tokens_per_verification() const {
    return verifications ? static_cast<double>(tokens) / verifications : 0.0;
  }
  double kv_bytes_per_token() const {
    return tokens ? static_cast<double>(draft_kv_bytes + verify_kv_bytes) / tokens : 0.0;
  }
  LosslessStats& operator+=(const LosslessStats& o);
};

class AdaptiveK;  // engine/adaptive_k.h

// Lossless generation one verification at a time, for callers that run their own loop (the
// server): start() samples the first token from the session's last logits (full attention's:
// the prompt's prefill is dense); each cycle() drafts, verifies and keeps tokens. Both return
// the text that became final. The session must hold the prompt; throws fasa::Error for K < 1, a
// tiered cache, or a prefill chunk below K + 1.
class LosslessGeneration {
 public:
  LosslessGeneration(Session& s, const GenerateOptions& opts, const LosslessOptions& lo);
  ~LosslessGeneration();
  std::string start();
  std::string cycle();  // after start(), while !done()
  bool done() const { return gen_.done(); }
  const Generation& generation() const { return gen_; }
  const LosslessStats& stats() const { return st_; }

 private:
  int choose_k() const;
  void draft(int32_t x, int k);  // decode steps from x: drafts_[0, k), p_[0, k)
  bool accepts(const TokenDist& q, const TokenDist& p, int32_t d);
  const float* row(int i) const { return vlogits_.data() + static_cast<size_t>(i) * n_vocab_; }

  Session& s_;
  GenerateOptions opts_;
  LosslessOptions lo_;
  Generation gen_;
  Sampler sampler_;  // drafts, acceptance tests and corrections (its own stream)
  int n_vocab_;
  std::unique_ptr<AdaptiveK> adaptive_;
  LosslessStats st_;
  bool started_ = false;
  std::vector<int32_t> drafts_;  // [k] this cycle's drafts
  std::vector<TokenDist> p_;     // [k] their draft distributions
  TokenDist q_, r_;              // a verified row's distribution; a residual
  std::vector<float> vlogits_;   // [k + 1, n_vocab] the verification's logits
};

// generate_from_prefilled with lossless decoding (opts.k >= 1): the same result as
// generate_from_prefilled on a `full` session for greedy sampling (token for token), the same
// distribution otherwise. The session must have room for the drafts (a tiered cache is refused)
// and a prefill chunk of at least K + 1 tokens. `stats` may be null.
GenerateResult generate_lossless(Session& session, const GenerateOptions& opts,
                                 const LosslessOptions& lossless,
                                 const std::function<void(std::string_view)>& on_text,
                                 LosslessStats* stats);

// generate() (prefill, then generate_lossless).
GenerateResult generate_lossless(Session& session, const std::vector<int32_t>& prompt,
                                 const GenerateOptions& opts, const LosslessOptions& lossless,
                                 const std::function<void(std::string_view)>& on_text,
                                 LosslessStats* stats);

}  // namespace fasa
