#include "fasa/kernels/topk.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

#include "fasa/core/workspace.h"

namespace fasa {

namespace {

// Ranking: score descending, then index ascending.
struct Better {
  const float* scores;
  bool operator()(int32_t a, int32_t b) const {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  }
};

constexpr int kSample = 1024;      // scores sampled to estimate the threshold
constexpr int kMinFilterN = 2048;  // below this, introselect over everything is as fast

// Introselect of the k best among `idx`, then sorted ascending. idx: [m], k <= m.
void select_sorted(const float* scores, std::vector<int32_t>& idx, int k) {
  if (k < static_cast<int>(idx.size())) {
    std::nth_element(idx.begin(), idx.begin() + k, idx.end(), Better{scores});
    idx.resize(k);
  }
  std::sort(idx.begin(), idx.end());
}

}  // namespace

// For k much smaller than n (FASA: 256 of 8192): a threshold tau from an evenly spaced sample
// (its kk-th largest score, kk a margin above k's share of the sample), then one branch-free pass
// keeps the indices with score >= tau, and introselect runs over those few. Exact: when at least
// k scores are >= tau, the k-th best score is >= tau, so every winner (ties included) is a
// candidate; otherwise (a rare, unlucky sample) it falls back to introselect over all n.
void top_k_indices(const float* scores, int n, int k, std::vector<int32_t>& out) {
  k = std::clamp(k, 0, n);
  if (n >= kMinFilterN && k <= n / 8) {
    ScratchFrame f;
    float* sample = f.take<float>(kSample);  // [kSample]
    for (int i = 0; i < kSample; ++i) sample[i] = scores[static_cast<int64_t>(i) * n / kSample];
    const int kk = std::min(kSample - 1, static_cast<int>(int64_t{k} * kSample * 3 / (2 * n)) + 16);
    std::nth_element(sample, sample + kk, sample + kSample, std::greater<float>());
    const float tau = sample[kk];
    out.resize(n);
    int m = 0;
    for (int i = 0; i < n; ++i) {
      out[m] = i;
      m += scores[i] >= tau ? 1 : 0;
    }
    if (m >= k) {
      out.resize(m);
      select_sorted(scores, out, k);
      return;
    }
  }
  out.resize(n);
  std::iota(out.begin(), out.end(), 0);
  select_sorted(scores, out, k);
}

int sorted_overlap(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  int n = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] == b[j]) {
      ++n;
      ++i;
      ++j;
    } else if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return n;
}

}  // namespace fasa
