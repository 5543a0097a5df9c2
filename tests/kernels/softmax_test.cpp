// softmax_inplace: its exp against libm, the SIMD path against the portable one bit for bit,
// and the result against a double-precision softmax.
#include <gtest/gtest.h>

#include <algorithm>
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

// max_value is the exact maximum wherever it lies; exp_sum_scaled is the sum of the scaled,
// shifted exps a scalar loop in double gives, and the denominator softmax_inplace uses;
// exp_sum_fast is that sum to 1e-5.
TEST(Softmax, MaxValueAndExpSumScaled) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 6.0f);
  for (int n : {1, 7, 15, 16, 17, 31, 100, 1000, 4099}) {
    std::vector<float> x(n);
    for (auto& v : x) v = nd(rng);
    for (int at : {0, n / 3, n - 1}) {  // the maximum in each part: head, body, tail
      std::vector<float> y = x;
      y[at] = 1e3f;
      EXPECT_EQ(max_value(y.data(), n), 1e3f) << n << " " << at;
    }
    const float mx = max_value(x.data(), n);
    EXPECT_EQ(mx, *std::max_element(x.begin(), x.end())) << n;
    for (float a : {1.0f, 0.125f, 2.5f}) {
      const float m = mx * a;
      double want = 0.0;
      for (float v : x) want += std::exp(static_cast<double>(v * a) - m);
      const double got = exp_sum_scaled(x.data(), a, m, n);
      EXPECT_NEAR(got, want, 4e-7 * want) << n << " a=" << a;
      EXPECT_GE(got, 1.0 - 1e-6) << n;  // the maximum's own term is 1
    }
    // exp_sum_fast: the same sum to 1e-5 relative, the maximum's term 1 to 4e-6, whatever
    // the range of the terms (a = 2.5 puts most far below the maximum, some under the clamp).
    for (float a : {1.0f, 0.125f, 2.5f, 40.0f}) {
      const float m = mx * a;
      double want = 0.0;
      for (float v : x) want += std::exp(static_cast<double>(v) * a - m);
      EXPECT_NEAR(exp_sum_fast(x.data(), a, m, n), want, 1e-5 * want) << n << " a=" << a;
    }
    // softmax_scaled: the softmax of x * a, bit for bit the scaled logits' in-place softmax,
    // leaving x as it was; with a = 1, softmax_inplace.
    for (float a : {1.0f, 0.125f}) {
      std::vector<float> scaled = x, y(n);
      for (float& v : scaled) v *= a;
      softmax_inplace(scaled.data(), n);
      const std::vector<float> before = x;
      softmax_scaled(x.data(), a, mx * a, n, y.data());
      EXPECT_EQ(0, std::memcmp(y.data(), scaled.data(), n * sizeof(float))) << n << " a=" << a;
      EXPECT_EQ(x, before);
    }
    std::vector<float> p = x;
    softmax_inplace(p.data(), n);
    const float inv = static_cast<float>(1.0 / exp_sum_scaled(x.data(), 1.0f, mx, n));
    std::vector<float> e(n);
    softmax_exp_shifted(x.data(), mx, n, e.data());
    for (int i = 0; i < n; ++i) EXPECT_EQ(p[i], e[i] * inv) << n << " " << i;  // same bits
  }
}

}  // namespace
}  // namespace fasa
