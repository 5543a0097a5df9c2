// top-k (sampled threshold + introselect, or introselect) against a full stable sort: random scores, heavy ties, -inf, signed
// zeros, every kind of k.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "fasa/kernels/topk.h"
#include "support/ref/kernels_ref.h"

namespace fasa {
namespace {

TEST(TopK, EqualsTheSortReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  std::uniform_int_distribution<int> small(-3, 3);
  for (int n : {1, 2, 17, 300, 2048, 5000, 8192}) {
    for (int kind = 0; kind < 6; ++kind) {
      std::vector<float> s(n);
      for (int i = 0; i < n; ++i) {
        switch (kind) {
          case 0: s[i] = nd(rng); break;
          case 1: s[i] = static_cast<float>(small(rng)); break;             // many exact ties
          case 2: s[i] = i % 5 == 0 ? -INFINITY : nd(rng) * 1e-30f; break;  // tiny + -inf
          case 4:
            s[i] = i % 8 == 0 ? 100.0f + i : nd(rng);
            break;  // sampled scores stand out: fallback
          case 5: s[i] = i < n / 2 ? -INFINITY : nd(rng); break;  // half -inf
          case 3: s[i] = (i % 2 ? -0.0f : 0.0f) + (i % 7 == 0 ? 1.0f : 0.0f); break;
        }
      }
      for (int k : {0, 1, 7, 64, 256, n / 9, n / 8, n / 3, n / 2, n - 1, n, n + 4}) {
        std::vector<int32_t> got, want;
        top_k_indices(s.data(), n, k, got);
        ref::top_k_indices(s.data(), n, k, want);
        EXPECT_EQ(got, want) << "n=" << n << " kind=" << kind << " k=" << k;
      }
    }
  }
}

}  // namespace
}  // namespace fasa
