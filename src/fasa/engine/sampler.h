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

// The distribution a Sampler draws from: the ids that survive its filters, each with a weight
// (exp((logit - max) / temp)); prob(id) = weight / sum, 0 for an id not listed. Greedy: the argmax
// alone, weight 1.
struct TokenDist {
  std::vector<int32_t> ids;  // [n] in the sampler's order (highest logit first)
  std::vector<double> w;     // [n] weights
  double sum = 0.0;
  double prob(int32_t id) const;
};

class Sampler {
 public:
  explicit Sampler(const SamplerParams& p);
  // logits: [n_vocab]. Greedy ties break to the lowest id. Equals draw(distribution(...)).
  int32_t sample(const float* logits, int n_vocab);
  bool greedy() const { return p_.temp <= 0.0f; }
  // The filtered distribution of `logits` ([n_vocab]): top-k, top-p, min-p, then temperature.
  void distribution(const float* logits, int n_vocab, TokenDist* out);
  // One id drawn from `d` (greedy: its one id, no random number used).
  int32_t draw(const TokenDist& d);
  // A uniform number in [0, 1) from the same generator (speculative sampling's acceptance test).
  double uniform();

 private:
  SamplerParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;  // (logit, id)
  std::vector<double> prob_;                     // [survivors] probabilities for the filters
  TokenDist dist_;                               // sample()'s
};

int32_t argmax(const float* logits, int n);

}  // namespace fasa
