// softmax_inplace: its exp against libm, the SIMD path against the portable one bit for bit,
// and the result against a double-precision softmax.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "fasa/kernels/ops.h"

namespace fasa {
namespace {

TEST(SoftmaxExp, WithinTwoUlpOfExp) {
  for (float x = -103.0f; x <= 0.0f; x += 0.0137f) {
    const double want = std::exp(static_cast<double>(x));
    const float got = softmax_exp(x);
    const double ulp =
        std::nextafter(static_cast<float>(want), INFINITY) - static_cast<float>(want);
    EXPECT_LE(std::fabs(got - want), 2.0 * ulp) << x;
  }
  EXPECT_EQ(softmax_exp(0.0f), 1.0f);
  EXPECT_EQ(softmax_exp(-200.0f), 0.0f);
}

TEST(Softmax, SimdEqualsPortableAndMatchesDouble) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  for (int n : {1, 7, 16, 17, 100, 1000, 4099}) {
    std::vector<float> x(n);
    for (auto& v : x) v = nd(rng);
    if (n > 1) x[n / 2] = -1e4f;  // far below the max: exactly 0
    std::vector<float> a = x, b = x;
    softmax_inplace(a.data(), n);
    detail::softmax_portable(b.data(), n);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float))) << n;
    double mx = x[0], sum = 0.0;
    for (float v : x) mx = std::max<double>(mx, v);
    for (float v : x) sum += std::exp(v - mx);
    double total = 0.0;
    for (int i = 0; i < n; ++i) {
      const double want = std::exp(x[i] - mx) / sum;
      EXPECT_NEAR(a[i], want, 2e-6 * want + 1e-12) << n << " " << i;
      total += a[i];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
    if (n > 1) {
      EXPECT_EQ(a[n / 2], 0.0f);
    }
  }
}

}  // namespace
}  // namespace fasa
