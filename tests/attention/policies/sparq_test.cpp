// `sparq` (policies/sparq.cpp): its output against the paper's mean-corrected formula, and its
// option errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "attention/policies/policy_fixture.h"
#include "fasa/attention/policy.h"

namespace fasa {
namespace {

using test::decode_through_driver;
using test::expect_policy_error;
using test::kShape;
using test::policy_from;
using test::RandomCache;

// SparQ against the paper's formula computed here in double: per query head the r largest |q_c|,
// approximate logits from those key dims, the top-k of them, exact attention over those k slots,
// and alpha * that + (1 - alpha) * mean(V), alpha = the approximate softmax (temperature
// sqrt(head_dim * sum_r |q| / sum |q|)) mass on the top-k.
TEST(SparqPolicy, OutputMatchesTheMeanCorrectedFormula) {
  const int n = 24, k = 6, r = 4, hd = kShape.head_dim, ng = kShape.n_group();
  RandomCache f(n, 19);
  auto on = policy_from("sparq:budget=6,r=4");
  auto off = policy_from("sparq:budget=6,r=4,mean_correction=off");
  auto pieces = policy_from("sparq:budget=6,r=4");
  for (int l = 0; l < kShape.n_layers; ++l) {
    on->on_append(f.cache, l, 0, n);
    off->on_append(f.cache, l, 0, n);
    for (auto [a, m] : {std::pair{0, 5}, {5, 1}, {6, 18}}) pieces->on_append(f.cache, l, a, m);
  }
  for (int l = 0; l < kShape.n_layers; ++l) {
    const std::vector<float> got = decode_through_driver(f, *on, l);
    const std::vector<float> got_off = decode_through_driver(f, *off, l);
    EXPECT_EQ(decode_through_driver(f, *pieces, l), got);  // the running V sum, appended in parts
    for (int h = 0; h < kShape.n_heads; ++h) {
      const int g = h / ng;
      const auto* K = static_cast<const float*>(f.cache.k_rows(l, g));  // [capacity, head_dim]
      const auto* V = static_cast<const float*>(f.cache.v_rows(l, g));
      const float* qh = f.q.data() + h * hd;
      std::vector<int> dims(hd);
      for (int c = 0; c < hd; ++c) dims[c] = c;
      std::stable_sort(dims.begin(), dims.end(),
                       [&](int a, int b) { return std::fabs(qh[a]) > std::fabs(qh[b]); });
      dims.resize(r);
      double sum_all = 0.0, sum_r = 0.0;
      for (int c = 0; c < hd; ++c) sum_all += std::fabs(qh[c]);
      for (int c : dims) sum_r += std::fabs(qh[c]);
      std::vector<double> approx(n);
      for (int t = 0; t < n; ++t) {
        approx[t] = 0.0;
        for (int c : dims) approx[t] += double(qh[c]) * K[t * hd + c];
      }
      std::vector<int> idx(n);
      for (int t = 0; t < n; ++t) idx[t] = t;
      std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return approx[a] > approx[b]; });
      idx.resize(k);
      const double temp = std::sqrt(hd * sum_r / sum_all);
      const double mx = *std::max_element(approx.begin(), approx.end());
      double z = 0.0, alpha = 0.0;
      for (int t = 0; t < n; ++t) z += std::exp((approx[t] - mx) / temp);
      for (int t : idx) alpha += std::exp((approx[t] - mx) / temp) / z;
      EXPECT_LT(alpha, 0.999);  // the correction is not vacuous
      std::vector<double> logit(k);
      double lmx = -INFINITY, lz = 0.0;
      for (int i = 0; i < k; ++i) {
        double d = 0.0;
        for (int c = 0; c < hd; ++c) d += double(qh[c]) * K[idx[i] * hd + c];
        logit[i] = d / std::sqrt(double(hd));
        lmx = std::max(lmx, logit[i]);
      }
      for (int i = 0; i < k; ++i) lz += std::exp(logit[i] - lmx);
      for (int c = 0; c < hd; ++c) {
        double y = 0.0, mean = 0.0;
        for (int i = 0; i < k; ++i) y += std::exp(logit[i] - lmx) / lz * V[idx[i] * hd + c];
        for (int t = 0; t < n; ++t) mean += V[t * hd + c] / n;
        EXPECT_NEAR(got_off[h * hd + c], y, 1e-4) << "head " << h << " dim " << c;
        EXPECT_NEAR(got[h * hd + c], alpha * y + (1.0 - alpha) * mean, 1e-4)
            << "head " << h << " dim " << c;
      }
    }
  }
  // Selections per query head; the r key dims of every slot are what it reads to choose.
  Selection s;
  on->select(f.query(1, 0), s);
  EXPECT_TRUE(s.per_head);
  EXPECT_EQ(s.bytes_read, uint64_t{2} * n * r * 4);
  EXPECT_EQ(s.mix_alpha.size(), 2u);
  off->select(f.query(1, 0), s);
  EXPECT_TRUE(s.mix_alpha.empty());
}

TEST(SparqPolicy, BadOptionsAreClearErrors) {
  expect_policy_error("sparq", "needs a budget");
  expect_policy_error("sparq:budget=8,r=0", "r must be a count");
  expect_policy_error("sparq:budget=8,r=17", "r must be a count");  // head_dim 16
  expect_policy_error("sparq:budget=8,r=2.5", "r must be a count");
  expect_policy_error("sparq:budget=8,r=x", "r must be a count");
  expect_policy_error("sparq:budget=8,mean_correction=maybe", "mean_correction must be 'on'");
  expect_policy_error("sparq:budget=8,k=4", "has no option 'k'");
  EXPECT_NO_THROW(policy_from("sparq:budget=8,r=16,mean_correction=off"));
}

}  // namespace
}  // namespace fasa
