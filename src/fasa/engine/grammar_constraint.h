// Grammar-constrained decoding (structured outputs: a JSON schema, guided_choice): before each
// sampling step every token whose bytes would take the text out of the grammar's prefixes
// (GrammarPrefix) is masked; an end-of-generation token is allowed only once the text is a whole
// value. The tokens are walked in byte order, so the states after a shared prefix are computed
// once and a dead prefix rules out every token that starts with it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fasa/engine/grammar_prefix.h"
#include "fasa/engine/json_schema.h"

namespace fasa {

class Tokenizer;

class GrammarConstraint {
 public:
  GrammarConstraint(const Tokenizer& tok, std::shared_ptr<const Grammar> grammar);
  // Sets logits[id] = -inf for every id the grammar does not allow next. logits: [n_vocab]
  void mask(float* logits, int n_vocab);
  // Advances by the token sampled (one mask() allowed).
  void accept(int32_t id);
  bool complete() const { return state_.complete(); }

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::vector<std::string> bytes_;  // [n_vocab] each token's bytes ("" for control tokens)
  std::vector<char> eog_;           // [n_vocab] end-of-generation ids
  std::vector<int32_t> order_;      // [n_text] the ids with bytes, sorted by their bytes
  std::vector<int32_t> shared_;     // [n_text] bytes order_[i] shares with order_[i - 1]
  GrammarPrefix state_;             // the text generated so far
  std::vector<GrammarPrefix> at_;   // at_[d]: state_ after d + 1 bytes of the token tried
  std::vector<char> allowed_;       // [n_vocab] mask()'s verdicts
};

}  // namespace fasa
