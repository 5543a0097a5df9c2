#include "fasa/engine/grammar_constraint.h"

#include <algorithm>
#include <limits>

#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

GrammarConstraint::GrammarConstraint(const Tokenizer& tok, std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)),
      bytes_(tok.n_vocab()),
      eog_(tok.n_vocab(), 0),
      state_(*grammar_),
      allowed_(tok.n_vocab(), 0) {
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    eog_[id] = tok.is_eog(id) ? 1 : 0;
    const TokenType type = tok.token_type(id);
    // User-defined tokens are text (Qwen's "<tool_call>" is one); control tokens have no bytes.
    const bool text =
        type == TokenType::Normal || type == TokenType::Byte || type == TokenType::UserDefined;
    if (!eog_[id] && text) {
      bytes_[id] = tok.token_to_bytes(id);
      if (!bytes_[id].empty()) order_.push_back(id);
    }
  }
  std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
    return bytes_[a] < bytes_[b] || (bytes_[a] == bytes_[b] && a < b);
  });
  shared_.assign(order_.size(), 0);
  for (size_t i = 1; i < order_.size(); ++i) {
    const std::string& p = bytes_[order_[i - 1]];
    const std::string& q = bytes_[order_[i]];
    const size_t n = std::min(p.size(), q.size());
    size_t s = 0;
    while (s < n && p[s] == q[s]) ++s;
    shared_[i] = static_cast<int32_t>(s);
  }
}

void GrammarConstraint::mask(float* logits, int n_vocab) {
  std::fill(allowed_.begin(), allowed_.end(), 0);
  int valid = 0;                               // at_[0, valid) follow the current token's bytes
  int dead = std::numeric_limits<int>::max();  // the previous token died at this byte
  for (size_t i = 0; i < order_.size(); ++i) {
    const std::string& b = bytes_[order_[i]];
    const int shared = shared_[i];
    valid = std::min(valid, shared);
    if (dead < shared) continue;  // it starts with the prefix that died
    dead = std::numeric_limits<int>::max();
    for (int d = valid; d < static_cast<int>(b.size()); ++d) {
      if (static_cast<int>(at_.size()) <= d) at_.emplace_back(*grammar_);
      const GrammarPrefix& from = d == 0 ? state_ : at_[d - 1];
      if (!from.feed_into(static_cast<unsigned char>(b[d]), &at_[d])) {
        dead = d;
        break;
      }
      valid = d + 1;
    }
    if (dead == std::numeric_limits<int>::max()) allowed_[order_[i]] = 1;
  }
  const bool done = state_.complete();
  constexpr float kOff = -std::numeric_limits<float>::infinity();
  for (int32_t id = 0; id < n_vocab; ++id) {
    const bool in_vocab = id < static_cast<int32_t>(allowed_.size());
    const bool ok = in_vocab && (eog_[id] ? done : allowed_[id] != 0);
    if (!ok) logits[id] = kOff;
  }
}

void GrammarConstraint::accept(int32_t id) {
  if (id >= 0 && id < static_cast<int32_t>(bytes_.size()) && !eog_[id]) state_.feed(bytes_[id]);
}

}  // namespace fasa
