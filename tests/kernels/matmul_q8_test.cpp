// The q8 activation quantization (the spec of the integer path) and the integer matmul against
// the exact f32 product: the only difference is the activations' 8-bit rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "fasa/core/dtype.h"
#include "fasa/core/f16.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul.h"
#include "fasa/kernels/matmul_q8.h"
#include "support/ref/kernels_ref.h"

namespace fasa {
namespace {

TEST(QuantizeActsQ8, RoundingScaleAndSums) {
  std::vector<float> x(64, 0.0f);  // block 0: crafted; block 1: all zero
  x[0] = 127.0f;                   // amax: d = 1, id = 1
  x[1] = 2.5f;                     // halves round to even
  x[2] = 3.5f;
  x[3] = -2.5f;
  x[4] = -126.4f;
  Q8Acts a;
  quantize_acts_q8(x.data(), 1, 64, a);
  EXPECT_EQ(a.q[0], 127);
  EXPECT_EQ(a.q[1], 2);
  EXPECT_EQ(a.q[2], 4);
  EXPECT_EQ(a.q[3], -2);
  EXPECT_EQ(a.q[4], -126);
  EXPECT_EQ(a.d[0], 1.0f);
  EXPECT_EQ(a.sum4[0], 127 + 2 + 4 - 2);
  EXPECT_EQ(a.sum4[1], -126);
  EXPECT_EQ(a.s[0], 127.0f + 2 + 4 - 2 - 126);
  for (int j = 32; j < 64; ++j) EXPECT_EQ(a.q[j], 0);
  EXPECT_EQ(a.d[1], 0.0f);
  // d is kept as the fp32 value of its fp16 rounding.
  std::vector<float> y(32, 0.0f);
  y[7] = 1.0f;
  quantize_acts_q8(y.data(), 1, 32, a);
  EXPECT_EQ(a.d[0], fp16_to_fp32(fp32_to_fp16(1.0f / 127.0f)));
  EXPECT_EQ(a.q[7], 127);
}

// |y_q8 - y_f32| <= sum_i |w_i| * (dx_b / 2 + |x_i| * 2^-10) + a little: each activation moves by
// at most half a quantization step, and its scale by fp16 rounding.
TEST(MatmulQ8, CloseToTheExactProduct) {
  std::mt19937 rng(77);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (DType type : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0}) {
    ASSERT_TRUE(has_q8_path(type));
    const DTypeInfo& info = dtype_info(type);
    const int64_t n_in = 192, n_out = 9, n_tok = 3, nb = n_in / 32;
    std::vector<uint8_t> w(n_out * nb * info.block_bytes);
    for (auto& b : w) b = static_cast<uint8_t>(rng());
    for (int64_t b = 0; b < n_out * nb; ++b) {  // sane fp16 scale (and min)
      const uint16_t d = fp32_to_fp16(0.02f * nd(rng));
      std::memcpy(w.data() + b * info.block_bytes, &d, 2);
      if (type == DType::Q4_1 || type == DType::Q5_1) {
        const uint16_t m = fp32_to_fp16(0.1f * nd(rng));
        std::memcpy(w.data() + b * info.block_bytes + 2, &m, 2);
      }
    }
    std::vector<float> x(n_tok * n_in), y(n_tok * n_out), wf(n_in);
    for (auto& v : x) v = nd(rng);
    matmul(type, w.data(), n_out, n_in, x.data(), n_tok, y.data());
    Q8Acts a;
    quantize_acts_q8(x.data(), n_tok, n_in, a);
    const int64_t row_bytes = nb * info.block_bytes;
    for (int64_t o = 0; o < n_out; ++o) {
      ref::dequantize_row(type, w.data() + o * row_bytes, wf.data(), n_in);
      for (int64_t t = 0; t < n_tok; ++t) {
        double exact = 0.0, bound = 1e-5;
        for (int64_t i = 0; i < n_in; ++i) {
          const double xi = x[t * n_in + i];
          exact += static_cast<double>(wf[i]) * xi;
          bound += std::fabs(wf[i]) * (0.5 * a.d[t * nb + i / 32] + std::fabs(xi) / 1024);
        }
        EXPECT_LE(std::fabs(y[t * n_out + o] - exact), bound) << dtype_name(type) << " o=" << o;
      }
    }
  }
  EXPECT_FALSE(has_q8_path(DType::Q6_K));
  EXPECT_FALSE(has_q8_path(DType::F16));
}

}  // namespace
}  // namespace fasa
