// What a request asks of the logits before sampling, as OpenAI's API and vLLM define it:
// presence and frequency penalties over the generated tokens, a multiplicative repetition
// penalty over the prompt and the generated tokens, and a bias per token id. Applied by
// Generation (generate.h) to a copy of the model's logits; logprobs are reported from the result.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace fasa {

struct LogitRules {
  // OpenAI: logit[t] -= presence * (count[t] > 0) + frequency * count[t], count over the
  // generated tokens. Both in [-2, 2]; 0 = off.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // vLLM / CTRL: a token seen in the prompt or the generated tokens has its logit divided by
  // this when positive, multiplied when negative. > 0; 1 = off.
  float repetition_penalty = 1.0f;
  std::vector<int32_t> prompt;  // the prompt's ids (for repetition_penalty only)
  // llama.cpp's repeat_last_n: the penalty looks only at the last N ids of the prompt followed
  // by the generated ids; < 0: at all of them.
  int repetition_last_n = -1;
  // OpenAI's logit_bias: (id, bias in [-100, 100]) added to the logit; -100 bans in practice,
  // +100 forces.
  std::vector<std::pair<int32_t, float>> bias;

  bool any() const {
    return presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f ||
           !bias.empty();
  }
  // logits: [n_vocab], changed in place; `generated`: the ids generated so far.
  void apply(float* logits, int n_vocab, const std::vector<int32_t>& generated) const;
};

}  // namespace fasa
