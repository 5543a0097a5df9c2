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

double TokenDist::prob(int32_t id) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == id) return w[i] / sum;
  }
  return 0.0;
}

int32_t Sampler::sample(const float* logits, int n_vocab) {
  if (greedy()) return argmax(logits, n_vocab);
  distribution(logits, n_vocab, &dist_);
  return draw(dist_);
}

void Sampler::distribution(const float* logits, int n_vocab, TokenDist* out) {
  out->ids.clear();
  out->w.clear();
  if (greedy()) {
    out->ids.push_back(argmax(logits, n_vocab));
    out->w.push_back(1.0);
    out->sum = 1.0;
    return;
  }
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
  std::vector<double>& prob = prob_;
  prob.resize(n);
  const double mx = cand_[0].first;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += prob[i] = std::exp(cand_[i].first - mx);
  for (size_t i = 0; i < n; ++i) prob[i] /= sum;
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
  // Temperature.
  out->sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    out->ids.push_back(cand_[i].second);
    out->w.push_back(std::exp((cand_[i].first - mx) / p_.temp));
    out->sum += out->w.back();
  }
}

int32_t Sampler::draw(const TokenDist& d) {
  FASA_CHECK(!d.ids.empty());
  if (greedy()) return d.ids[0];
  std::uniform_real_distribution<double> uni(0.0, d.sum);
  double r = uni(rng_);
  for (size_t i = 0; i < d.ids.size(); ++i) {
    r -= d.w[i];
    if (r <= 0.0) return d.ids[i];
  }
  return d.ids.back();
}

double Sampler::uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

}  // namespace fasa
