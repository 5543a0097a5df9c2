#include "fasa/engine/sampler.h"

#include <algorithm>
#include <cmath>

#include "fasa/core/error.h"

namespace fasa {

void SamplerParams::validate() const {
  if (!std::isfinite(temp) || temp < 0.0f) fail("temperature must be >= 0 (got {})", temp);
  if (!(top_p > 0.0f && top_p <= 1.0f)) fail("top-p must be in (0, 1] (got {})", top_p);
  if (!(min_p >= 0.0f && min_p < 1.0f)) fail("min-p must be in [0, 1) (got {})", min_p);
  if (top_k < 0) fail("top-k must be >= 0 (got {})", top_k);
}

int32_t argmax(const float* logits, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

Sampler::Sampler(const SamplerParams& p) : p_(p), rng_(p.seed) { p_.validate(); }

int32_t Sampler::sample(const float* logits, int n_vocab) {
  if (p_.temp <= 0.0f) return argmax(logits, n_vocab);
  cand_.clear();
  for (int i = 0; i < n_vocab; ++i) cand_.emplace_back(logits[i], i);
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  size_t n = cand_.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < n) {
    std::partial_sort(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
    n = p_.top_k;
  } else {
    std::sort(cand_.begin(), cand_.end(), by_logit);
  }
  // Probabilities of the survivors (softmax at temperature 1 for the filters, as llama.cpp).
  std::vector<double> prob(n);
  const double mx = cand_[0].first;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += prob[i] = std::exp(cand_[i].first - mx);
  for (auto& q : prob) q /= sum;
  if (p_.top_p < 1.0f) {
    double cum = 0.0;
    size_t keep = n;
    for (size_t i = 0; i < n; ++i) {
      cum += prob[i];
      if (cum >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
    n = keep;
  }
  if (p_.min_p > 0.0f) {
    const double floor = prob[0] * p_.min_p;
    size_t keep = 1;
    while (keep < n && prob[keep] >= floor) ++keep;
    n = keep;
  }
  // Temperature, then draw.
  std::vector<double> w(n);
  double wsum = 0.0;
  for (size_t i = 0; i < n; ++i) wsum += w[i] = std::exp((cand_[i].first - mx) / p_.temp);
  std::uniform_real_distribution<double> uni(0.0, wsum);
  double r = uni(rng_);
  for (size_t i = 0; i < n; ++i) {
    r -= w[i];
    if (r <= 0.0) return cand_[i].second;
  }
  return cand_[n - 1].second;
}

}  // namespace fasa
