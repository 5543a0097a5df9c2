// Multiple-choice tasks scored by log-likelihood, as lm-eval's loglikelihood requests are: each
// choice's continuation tokens, teacher-forced after the prompt under dense attention, summed
// log-probabilities; the task's answer is the choice with the largest sum.
//
// Tokenization follows lm-eval (TemplateLM._encode_pair): the prompt's trailing white space
// moves to the front of the continuation; the context's tokens are encode(context), the
// continuation's are encode(context + continuation) past as many tokens as the context has;
// what the model reads is the context's tokens then the continuation's (which need not be
// encode(context + continuation) itself). Both encodes are as a task prompt is encoded for
// generation (BOS when the model asks for one, special-token texts left as text).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fasa/engine/session.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

struct ChoiceTokens {
  std::vector<int32_t> context;                    // [n_context] at least one
  std::vector<std::vector<int32_t>> continuation;  // [n_choices][n_continuation_c] (may be empty)
};

// Throws fasa::Error when the context has no tokens (a prompt of white space alone and no BOS).
ChoiceTokens choice_tokens(const Tokenizer& tok, const std::string& prompt,
                           const std::vector<std::string>& choices);

struct ChoiceScore {
  std::vector<double> logprob;  // [n_choices] sum over the continuation's tokens (0 for none)
  int pred = 0;                 // argmax of logprob (the first of equals)
  int pred_norm = 0;            // argmax of logprob / the choice's characters (lm-eval's acc_norm)
};

// `make_dense`: a fresh full-attention session with room for the context and the longest
// continuation. The context is prefilled once; each choice continues from a copy of it.
ChoiceScore score_choices(const std::function<std::unique_ptr<Session>()>& make_dense,
                          const ChoiceTokens& t, const std::vector<std::string>& choices);

// Unicode code points of UTF-8 text (Python's len of the string; invalid bytes count one each).
size_t utf8_length(const std::string& s);

}  // namespace fasa
