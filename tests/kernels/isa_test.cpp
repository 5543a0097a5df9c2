// Runtime instruction-set dispatch (core/isa.h): the sets this CPU runs are found, FASA_ISA-style
// names parse or fail clearly, and every kernel outside matmul (matmul_test.cpp covers matmul and
// dequantization) gives the same bits in every set: softmax, its exp, the row ops, TIP, and
// attention (prefill's many-query shape and decode's single query).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/core/isa.h"
#include "fasa/kernels/attend.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/tip.h"
#include "support/isa_guard.h"

namespace fasa {
namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

std::vector<float> normal(size_t n, std::mt19937& rng, float sd = 1.0f) {
  std::normal_distribution<float> nd(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// Runs fn once per available set; returns each set's output.
template <typename Fn>
std::vector<std::vector<float>> per_isa(Fn&& fn) {
  IsaGuard guard;
  std::vector<std::vector<float>> out;
  for (const Isa isa : available_isas()) {
    set_active_isa(isa);
    out.push_back(fn());
  }
  return out;
}

void expect_all_equal(const std::vector<std::vector<float>>& outs, const char* what) {
  const std::vector<Isa> isas = available_isas();
  for (size_t i = 1; i < outs.size(); ++i) {
    EXPECT_TRUE(same_bits(outs[0], outs[i]))
        << what << ": " << isa_name(isas[i]) << " differs from " << isa_name(isas[0]);
  }
}

TEST(Isa, ScalarAlwaysAvailableAndBestIsActiveByDefault) {
  const std::vector<Isa> avail = available_isas();
  ASSERT_FALSE(avail.empty());
  EXPECT_EQ(avail.front(), Isa::Scalar);
  if (std::getenv("FASA_ISA") == nullptr) {
    EXPECT_EQ(active_isa(), avail.back());
  }
#if FASA_X86
  // The development and CI machines have AVX-512 (guide: "AVX-512 (VNNI, BF16) CPUs"); if this
  // fails on another machine, the machine lacks a set, not the build.
  if (__builtin_cpu_supports("avx512vnni")) {
    EXPECT_EQ(avail.back(), Isa::Avx512);
  }
#endif
}

TEST(Isa, NamesParseAndBadNamesFail) {
  for (const Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    EXPECT_EQ(parse_isa(isa_name(isa)), isa);
  }
  try {
    parse_isa("sse9");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sse9"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("avx512"), std::string::npos);
  }
}

TEST(Isa, SoftmaxAndExpSameBits) {
  std::mt19937 rng(1);
  for (int n : {1, 15, 16, 17, 100, 1000}) {
    const std::vector<float> x = normal(n, rng, 8.0f);
    expect_all_equal(per_isa([&] {
                       std::vector<float> a = x;
                       softmax_inplace(a.data(), n);
                       std::vector<float> e(n);
                       softmax_exp_shifted(x.data(), 3.0f, n, e.data());
                       a.insert(a.end(), e.begin(), e.end());
                       const float mx = max_value(x.data(), n);
                       a.push_back(mx);
                       const double z = exp_sum_scaled(x.data(), 0.37f, mx * 0.37f, n);
                       a.push_back(static_cast<float>(z));
                       a.push_back(static_cast<float>(z - static_cast<float>(z)));
                       a.push_back(exp_sum_fast(x.data(), 0.37f, mx * 0.37f, n));
                       std::vector<float> y(n);
                       softmax_scaled(x.data(), 0.37f, mx * 0.37f, n, y.data());
                       a.insert(a.end(), y.begin(), y.end());
                       return a;
                     }),
                     "softmax");
  }
}

// exp over its whole range, subnormal results included (x down to the -104 clamp and below).
TEST(Isa, ExpSameBitsOverItsRange) {
  std::vector<float> x;
  for (float v = -110.0f; v <= 0.0f; v += 0.0137f) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  expect_all_equal(per_isa([&] {
                     std::vector<float> e(n);
                     softmax_exp_shifted(x.data(), 0.0f, n, e.data());
                     return e;
                   }),
                   "exp");
  // exp_sum_fast's exp over the same range: sums of 16 and of 17 terms (vector and tail lanes).
  expect_all_equal(per_isa([&] {
                     std::vector<float> sums;
                     for (int64_t i = 0; i + 17 <= n; i += 16) {
                       sums.push_back(exp_sum_fast(x.data() + i, 1.0f, 0.0f, 16));
                       sums.push_back(exp_sum_fast(x.data() + i, 1.0f, 0.0f, 17));
                     }
                     return sums;
                   }),
                   "exp_sum_fast");
  std::vector<float> scalar(n);
  for (int64_t i = 0; i < n; ++i) scalar[i] = softmax_exp(x[i]);
  std::vector<float> vec(n);
  softmax_exp_shifted(x.data(), 0.0f, n, vec.data());
  EXPECT_TRUE(same_bits(scalar, vec)) << "vector exp vs softmax_exp";
}

TEST(Isa, RowOpsSameBits) {
  std::mt19937 rng(2);
  const int n = 576, hd = 64;
  const std::vector<float> x = normal(n, rng), w = normal(n, rng), u = normal(n, rng);
  expect_all_equal(per_isa([&] {
                     std::vector<float> out(n), h(n), v(x.begin(), x.begin() + hd), f(hd / 2),
                         gl(n);
                     rmsnorm(x.data(), w.data(), 1e-5f, n, out.data());
                     silu_mul(x.data(), u.data(), n, h.data());
                     add_inplace(h.data(), w.data(), n);
                     gelu_tanh_mul(x.data(), u.data(), n, gl.data());
                     out.insert(out.end(), gl.begin(), gl.end());
                     rope_freqs(10000.0f, hd, f.data());
                     rope_apply(v.data(), hd, hd, RopeLayout::Neox, 1234, f.data());
                     out.insert(out.end(), h.begin(), h.end());
                     out.insert(out.end(), v.begin(), v.end());
                     return out;
                   }),
                   "rmsnorm, silu_mul, add, gelu, rope");
}

// A gated activation product h = act(g) * u on every instruction set: within tol(x, u, want) of
// the formula in double, and the same bits on every form. g: 4096 normal values times `spread`
// (both tails), then a ramp from `ramp0` in steps of 0.1 beyond the clamps (an odd total: every
// form's scalar tail runs too).
template <class Kernel, class Want, class Tol>
void expect_activation(Kernel kernel, Want want_of, Tol tol, float spread, float ramp0,
                       unsigned seed) {
  std::mt19937 rng(seed);
  const int n_rand = 4096, n_ramp = 1003, n = n_rand + n_ramp;
  std::vector<float> g = normal(n, rng), u = normal(n, rng), h(n);
  for (int i = 0; i < n_rand; ++i) g[i] *= spread;
  for (int i = 0; i < n_ramp; ++i) g[n_rand + i] = ramp0 + 0.1f * i;
  IsaGuard guard;
  std::vector<float> first;
  for (const Isa isa : available_isas()) {
    set_active_isa(isa);
    kernel(g.data(), u.data(), n, h.data());
    for (int i = 0; i < n; ++i) {
      const double x = g[i], want = want_of(x) * u[i];
      ASSERT_NEAR(h[i], want, tol(x, u[i], want)) << "x = " << x;
    }
    if (first.empty()) first = h;
    EXPECT_TRUE(same_bits(first, h)) << isa_name(isa);
  }
}

TEST(Isa, GeluTanhMulMatchesFormula) {
  expect_activation(
      gelu_tanh_mul,
      [](double x) {
        return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
      },
      [](double, double, double want) { return 1e-6 + 1e-5 * std::fabs(want); }, 4.0f, -50.0f, 7);
}

// Below the clamp (x < -43) the kernel's product and the true one are both under e^-43 |x u|.
TEST(Isa, SiluMulMatchesFormula) {
  expect_activation(
      silu_mul, [](double x) { return x / (1.0 + std::exp(-x)); },
      [](double x, double u, double want) {
        return 1e-6 * std::fabs(want) + 3e-19 * std::fabs(x * u);
      },
      8.0f, -60.0f, 8);
}

TEST(Isa, TipSameBits) {
  std::mt19937 rng(3);
  for (bool f16 : {true, false}) {
    const int n = 1000, n_cols = 9;
    const size_t stride = n + 24;
    const std::vector<float> kf = normal(n_cols * stride, rng);
    std::vector<uint16_t> kh(kf.size());
    for (size_t i = 0; i < kf.size(); ++i) kh[i] = fp32_to_fp16(kf[i]);
    const std::vector<TipTerm> terms = {{3, 0.5f}, {0, -1.25f}, {8, 2.0f}, {5, 0.75f}};
    const void* packed = f16 ? static_cast<const void*>(kh.data()) : kf.data();
    expect_all_equal(per_isa([&] {
                       std::vector<float> s(n);
                       tip_scores(packed, f16, stride, terms.data(), 4, n, s.data());
                       return s;
                     }),
                     f16 ? "tip f16" : "tip f32");
  }
}

TEST(Isa, AttentionSameBits) {
  std::mt19937 rng(4);
  for (KvType t : {KvType::F16, KvType::F32}) {
    for (int hd : {64, 24, 80, 128, 256}) {  // AVX-512 holds 4, 1 + 4, 8, 2 x 8 vectors of acc
      const int n = 2 * kAttnChunk + 77;
      const std::vector<float> kf = normal(n * hd, rng), vf = normal(n * hd, rng);
      std::vector<uint16_t> kh(kf.size()), vh(vf.size());
      for (size_t i = 0; i < kf.size(); ++i) {
        kh[i] = fp32_to_fp16(kf[i]);
        vh[i] = fp32_to_fp16(vf[i]);
      }
      const KvRows rows = t == KvType::F16 ? KvRows{kh.data(), vh.data(), t, hd}
                                           : KvRows{kf.data(), vf.data(), t, hd};
      const std::vector<float> q = normal(3 * hd, rng);
      std::vector<int32_t> slots;
      for (int s = 0; s < n; s += 3) slots.push_back(s);
      expect_all_equal(per_isa([&] {
                         std::vector<float> out(hd), all;
                         for (int len : {1, 17, 64, 200, n}) {
                           attend_one(q.data(), rows, nullptr, len, 0.125f, out.data());
                           all.insert(all.end(), out.begin(), out.end());
                         }
                         const int m = static_cast<int>(slots.size());
                         attend_one(q.data(), rows, slots.data(), m, 0.125f, out.data());
                         all.insert(all.end(), out.begin(), out.end());
                         std::vector<float> probs(m);
                         attend_probs(q.data() + hd, rows, slots.data(), m, 0.125f, probs.data());
                         all.insert(all.end(), probs.begin(), probs.end());
                         // Three queries with causal limits inside one chunk (prefill's shape).
                         const float* qs[3] = {q.data(), q.data() + hd, q.data() + 2 * hd};
                         const int n_keys[3] = {5, 70, kAttnChunk};
                         std::vector<float> st(3 * attn_state_size(hd));
                         attend_partial(qs, 3, n_keys, rows, nullptr, 0, kAttnChunk, 0.3f,
                                        st.data());
                         all.insert(all.end(), st.begin(), st.end());
                         return all;
                       }),
                       t == KvType::F16 ? "attention f16" : "attention f32");
    }
  }
}

}  // namespace
}  // namespace fasa
