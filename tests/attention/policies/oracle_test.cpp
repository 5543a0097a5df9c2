// `oracle` (policies/oracle.cpp) against a plain top-k of the exact logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "attention/policies/policy_fixture.h"
#include "fasa/attention/policy.h"

namespace fasa {
namespace {

using test::kShape;
using test::policy_from;
using test::RandomCache;

// Oracle against a plain reference: per head, top-k of q.k; shared, top-k of summed softmax.
TEST(OraclePolicy, MatchesPlainTopK) {
  const int n = 37, k = 9, hd = kShape.head_dim;
  RandomCache f(n, 7);
  auto shared = policy_from("oracle:budget=9");
  auto per_head = policy_from("oracle:budget=9,gqa=per-head");
  for (int g = 0; g < kShape.n_kv_heads; ++g) {
    const AttnQuery q = f.query(1, g);
    const auto* K = static_cast<const float*>(f.cache.k_rows(1, g));  // [capacity, head_dim]
    std::vector<double> mass(n, 0.0);
    Selection ph, sh;
    per_head->select(q, ph);
    shared->select(q, sh);
    ASSERT_TRUE(ph.per_head);
    for (int h = 0; h < kShape.n_group(); ++h) {
      std::vector<double> logit(n);
      for (int j = 0; j < n; ++j) {
        double d = 0.0;
        for (int i = 0; i < hd; ++i) d += static_cast<double>(q.q[h * hd + i]) * K[j * hd + i];
        logit[j] = d;
      }
      std::vector<int32_t> idx(n);
      for (int j = 0; j < n; ++j) idx[j] = j;
      std::sort(idx.begin(), idx.end(), [&](int a, int b) { return logit[a] > logit[b]; });
      std::vector<int32_t> want(idx.begin(), idx.begin() + k);
      std::sort(want.begin(), want.end());
      EXPECT_EQ(ph.head_slots[h], want);  // recall 1
      const double mx = *std::max_element(logit.begin(), logit.end());
      double z = 0.0;
      for (double x : logit) z += std::exp((x - mx) / std::sqrt(hd));
      for (int j = 0; j < n; ++j) mass[j] += std::exp((logit[j] - mx) / std::sqrt(hd)) / z;
    }
    std::vector<int32_t> idx(n);
    for (int j = 0; j < n; ++j) idx[j] = j;
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return mass[a] > mass[b]; });
    std::vector<int32_t> want(idx.begin(), idx.begin() + k);
    std::sort(want.begin(), want.end());
    EXPECT_FALSE(sh.per_head);
    EXPECT_EQ(sh.slots, want);
  }
}

}  // namespace
}  // namespace fasa
