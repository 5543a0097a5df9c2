// Token sampling: greedy, or temperature with top-k, top-p and min-p filters (in that order,
// as llama.cpp applies them), from a seeded generator so runs are reproducible.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace fasa {

struct SamplerParams {
  float temp = 0.8f;    // <= 0: greedy
  int top_k = 40;       // <= 0: off
  float top_p = 0.95f;  // >= 1: off
  float min_p = 0.05f;  // <= 0: off
  uint64_t seed = 0;
  void validate() const;  // throws fasa::Error naming the bad value
};

class Sampler {
 public:
  explicit Sampler(const SamplerParams& p);
  // logits: [n_vocab]. Greedy ties break to the lowest id.
  int32_t sample(const float* logits, int n_vocab);

 private:
  SamplerParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;  // (logit, id)
};

int32_t argmax(const float* logits, int n);

}  // namespace fasa
