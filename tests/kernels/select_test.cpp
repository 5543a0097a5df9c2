// sum_rth_largest and rth_largest (kernels/select.h) against the scalar reference, std::nth_element over the
// sums, on every instruction set: random values, heavy ties, +-0 and -inf, every path (the
// bound from every 8th key, the fallback when too few keys pass it, short arrays).
#include "fasa/kernels/select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "fasa/core/isa.h"
#include "support/isa_guard.h"

namespace fasa {
namespace {

float reference(const std::vector<float>& a, const std::vector<float>& b, int r) {
  std::vector<float> v(a.size());
  for (size_t i = 0; i < a.size(); ++i) v[i] = a[i] + b[i];
  std::nth_element(v.begin(), v.begin() + (r - 1), v.end(), std::greater<float>());
  return v[r - 1];
}

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// kind 0: normal; 1: small integers (ties); 2: zeros of both signs, some -inf; 3: one value.
std::vector<float> values(int n, int kind, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<float> v(n);
  for (auto& x : v) {
    switch (kind) {
      case 0: x = nd(rng); break;
      case 1: x = static_cast<float>(small(rng)); break;
      case 2: {
        const int c = small(rng);
        x = c < -1 ? -std::numeric_limits<float>::infinity() : (c < 1 ? -0.0f : 0.0f);
        break;
      }
      default: x = 1.5f;
    }
  }
  return v;
}

TEST(SumRthLargest, MatchesNthElementOnEveryIsa) {
  IsaGuard guard;
  std::mt19937 rng(7);
  int cases = 0;
  for (const int n : {1, 2, 7, 16, 100, 127, 128, 129, 512, 513, 1000, 4096}) {
    for (int kind = 0; kind < 4; ++kind) {
      const std::vector<float> a = values(n, kind, rng);
      const std::vector<float> b = kind == 2 ? std::vector<float>(n, 0.0f) : values(n, 0, rng);
      for (const int r : {1, 2, 3, n / 32, n / 8, n / 4, n / 4 + 1, n / 2, n - 1, n}) {
        if (r < 1 || r > n) continue;
        const float want = reference(a, b, r);
        std::vector<uint32_t> got_bits;
        for (const Isa isa : available_isas()) {
          set_active_isa(isa);
          std::vector<float> scratch(2 * n + 16);
          const float got = sum_rth_largest(a.data(), b.data(), n, r, scratch.data());
          EXPECT_EQ(got, want) << isa_name(isa) << " n=" << n << " kind=" << kind << " r=" << r;
          std::vector<float> v(n);
          for (int i = 0; i < n; ++i) v[i] = a[i] + b[i];
          EXPECT_EQ(bits(rth_largest(v.data(), n, r, scratch.data())), bits(got));
          got_bits.push_back(bits(got));
        }
        for (size_t i = 1; i < got_bits.size(); ++i) EXPECT_EQ(got_bits[i], got_bits[0]);
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 300);
}

// Sums that round: the r-th largest is of the float sums, not of exact ones.
TEST(SumRthLargest, RanksTheRoundedSums) {
  const std::vector<float> a = {1e8f, 1e8f, 0.0f, 3.0f};
  const std::vector<float> b = {1.0f, 4.0f, 2.0f, 0.0f};  // 1e8 + 1 rounds to 1e8, + 4 does not
  std::vector<float> scratch(2 * 4 + 16);
  EXPECT_EQ(sum_rth_largest(a.data(), b.data(), 4, 1, scratch.data()), 1e8f + 4.0f);
  EXPECT_EQ(sum_rth_largest(a.data(), b.data(), 4, 2, scratch.data()), 1e8f);
  EXPECT_EQ(sum_rth_largest(a.data(), b.data(), 4, 3, scratch.data()), 3.0f);
  EXPECT_EQ(sum_rth_largest(a.data(), b.data(), 4, 4, scratch.data()), 2.0f);
}

}  // namespace
}  // namespace fasa
