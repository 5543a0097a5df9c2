// The q8_K activation quantization (the spec of the K-quant integer path), and the integer
// K-quant matmul against (a) the dot product of the dequantized weights with the dequantized q8_K
// activations in double, tightly, (b) itself across every instruction set, bitwise, and (c) the
// exact f32 product within the activations' 8-bit rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fasa/core/dtype.h"
#include "fasa/core/f16.h"
#include "fasa/core/isa.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul.h"
#include "fasa/kernels/matmul_q8k.h"
#include "support/isa_guard.h"
#include "support/ref/kernels_ref.h"

namespace fasa {
namespace {

const DType kKTypes[] = {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};

// Byte offsets of a block's fp16 d and dmin (-1: none).
void f16_fields(DType type, int* d_off, int* min_off) {
  switch (type) {
    case DType::Q2_K:
      *d_off = 80;
      *min_off = 82;
      return;
    case DType::Q3_K:
      *d_off = 108;
      *min_off = -1;
      return;
    case DType::Q6_K:
      *d_off = 208;
      *min_off = -1;
      return;
    default:
      *d_off = 0;
      *min_off = 2;
      return;  // Q4_K, Q5_K
  }
}

// Random code and scale bytes, with small finite fp16 d and dmin. [n_out, n_in] of `type`.
std::vector<uint8_t> make_weights(DType type, int64_t n_out, int64_t n_in, std::mt19937& rng) {
  const DTypeInfo& info = dtype_info(type);
  const int64_t n_blocks = n_out * n_in / 256;
  std::vector<uint8_t> w(static_cast<size_t>(n_blocks * info.block_bytes));
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f), min(-0.5f, 0.5f);
  int d_off = 0, min_off = -1;
  f16_fields(type, &d_off, &min_off);
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = w.data() + b * info.block_bytes;
    const uint16_t d = fp32_to_fp16(scale(rng)), m = fp32_to_fp16(min(rng));
    std::memcpy(blk + d_off, &d, 2);
    if (min_off >= 0) std::memcpy(blk + min_off, &m, 2);
  }
  return w;
}

std::vector<float> make_activations(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = nd(rng);
  return x;
}

std::vector<float> dequantize_rows(DType type, const std::vector<uint8_t>& w, int64_t n_out,
                                   int64_t n_in) {
  std::vector<float> wf(static_cast<size_t>(n_out * n_in));  // [n_out, n_in]
  const int64_t row_bytes = n_in / 256 * dtype_info(type).block_bytes;
  for (int64_t o = 0; o < n_out; ++o) {
    ref::dequantize_row(type, w.data() + o * row_bytes, wf.data() + o * n_in, n_in);
  }
  return wf;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

// (a): |y - sum_i w_i dq_i q_i| <= 1e-5 * sum_i |w_i dq_i q_i| (double), w from ref dequant.
void expect_matches_dequantized_dot(DType type, const std::vector<uint8_t>& w, int64_t n_out,
                                    int64_t n_in, const Q8KActs& a, const std::vector<float>& y,
                                    const std::string& what) {
  const std::vector<float> wf = dequantize_rows(type, w, n_out, n_in);
  const int64_t nb = n_in / 256;
  int bad = 0;
  for (int64_t t = 0; t < a.n_tok; ++t) {
    for (int64_t o = 0; o < n_out; ++o) {
      double want = 0.0, mag = 0.0;
      for (int64_t i = 0; i < n_in; ++i) {
        const double xq = static_cast<double>(a.d[t * nb + i / 256]) * a.q[t * n_in + i];
        want += wf[o * n_in + i] * xq;
        mag += std::fabs(wf[o * n_in + i] * xq);
      }
      const double got = y[t * n_out + o];
      if (!(std::fabs(got - want) <= 1e-5 * mag) && bad++ == 0) {
        ADD_FAILURE() << what << " t=" << t << " o=" << o << ": got " << got << " want " << want
                      << " (sum |w x| = " << mag << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

TEST(QuantizeActsQ8K, RoundingScaleAndSums) {
  std::vector<float> x(512, 0.0f);  // block 0: crafted; block 1: all zero
  x[0] = 1.25f;                     // * 2 = 2.5 -> 2 (half to even)
  x[1] = 1.75f;                     // 3.5 -> 4
  x[2] = -64.0f;  // the first value of largest magnitude: iscale = -128 / -64 = 2, d = 0.5
  x[3] = 64.0f;   // 128 -> clamped to 127
  x[20] = -0.2f;  // -0.4 -> -0 -> 0
  x[21] = 10.3f;  // 20.6 -> 21
  Q8KActs a;
  quantize_acts_q8k(x.data(), 1, 512, a);
  ASSERT_EQ(a.q.size(), 512u);
  ASSERT_EQ(a.d.size(), 2u);
  ASSERT_EQ(a.bsum.size(), 32u);
  EXPECT_EQ(a.d[0], -64.0f / -128.0f);
  EXPECT_EQ(a.q[0], 2);
  EXPECT_EQ(a.q[1], 4);
  EXPECT_EQ(a.q[2], -128);
  EXPECT_EQ(a.q[3], 127);
  EXPECT_EQ(a.q[20], 0);
  EXPECT_EQ(a.q[21], 21);
  EXPECT_EQ(a.bsum[0], 2 + 4 - 128 + 127);
  EXPECT_EQ(a.bsum[1], 21);
  ASSERT_EQ(a.bsum_pairs.size(), 8u);
  EXPECT_EQ(a.bsum_pairs[0], 2 + 4 - 128 + 127 + 21);  // (sum over 0..31, sum over 32..63 = 0)
  for (int p = 1; p < 8; ++p) EXPECT_EQ(a.bsum_pairs[p], 0) << p;
  for (int g = 2; g < 32; ++g) EXPECT_EQ(a.bsum[g], 0) << g;
  for (int j = 256; j < 512; ++j) EXPECT_EQ(a.q[j], 0);
  EXPECT_EQ(a.d[1], 0.0f);
  // A positive extreme maps to -128 too (d < 0), so d * q reproduces it exactly.
  std::vector<float> y(256, 0.5f);
  y[7] = 3.0f;
  quantize_acts_q8k(y.data(), 1, 256, a);
  EXPECT_EQ(a.q[7], -128);
  EXPECT_EQ(a.d[0] * static_cast<float>(a.q[7]), 3.0f);
  EXPECT_EQ(a.q[0], static_cast<int8_t>(std::nearbyint(0.5f * (-128.0f / 3.0f))));
}

// bsum_pairs: the sums over each 32 elements, two per int32 as int16 (low, high), negative too.
TEST(QuantizeActsQ8K, PairSumsOver32) {
  std::mt19937 rng(41);
  const std::vector<float> x = make_activations(3 * 512, rng);
  Q8KActs a;
  quantize_acts_q8k(x.data(), 3, 512, a);
  ASSERT_EQ(a.bsum_pairs.size(), 3u * 2 * 4);
  int negative = 0;
  for (size_t i = 0; i < a.bsum_pairs.size(); ++i) {
    const int32_t* bs = a.bsum.data() + (i / 4) * 16 + (i % 4) * 4;
    const auto lo = static_cast<int16_t>(a.bsum_pairs[i] & 0xffff);
    const auto hi = static_cast<int16_t>(static_cast<uint32_t>(a.bsum_pairs[i]) >> 16);
    EXPECT_EQ(lo, bs[0] + bs[1]) << i;
    EXPECT_EQ(hi, bs[2] + bs[3]) << i;
    negative += lo < 0;
  }
  EXPECT_GT(negative, 0);
}

TEST(MatmulQ8K, PathTypes) {
  for (const DType type : kKTypes) EXPECT_TRUE(has_q8k_path(type)) << dtype_name(type);
  for (const DType type : {DType::F32, DType::F16, DType::Q4_0, DType::Q8_0, DType::Q8_K}) {
    EXPECT_FALSE(has_q8k_path(type)) << dtype_name(type);
  }
}

// (a) and (b) on random blocks, several shapes (rows and tokens beyond one micro-kernel tile).
TEST(MatmulQ8K, MatchesDequantizedDotAndIsaBits) {
  std::mt19937 rng(4242);
  struct Shape {
    int64_t n_out, n_in, n_tok;
  };
  const Shape shapes[] = {{1, 256, 1}, {3, 512, 2}, {9, 1280, 5}, {17, 256, 7}};
  for (const DType type : kKTypes) {
    for (const Shape& s : shapes) {
      const std::vector<uint8_t> w = make_weights(type, s.n_out, s.n_in, rng);
      const std::vector<float> x = make_activations(s.n_tok * s.n_in, rng);
      Q8KActs a;
      quantize_acts_q8k(x.data(), s.n_tok, s.n_in, a);
      const std::string what = std::string(dtype_name(type)) + " n_out=" + std::to_string(s.n_out) +
                               " n_in=" + std::to_string(s.n_in) +
                               " n_tok=" + std::to_string(s.n_tok);
      std::vector<float> y(static_cast<size_t>(s.n_tok * s.n_out), NAN);
      matmul_q8k(type, w.data(), s.n_out, s.n_in, a, y.data());
      expect_matches_dequantized_dot(type, w, s.n_out, s.n_in, a, y, what);
      IsaGuard guard;
      for (const Isa isa : available_isas()) {
        set_active_isa(isa);
        std::vector<float> y_isa(y.size(), NAN), y_port(y.size(), NAN), y_mm(y.size(), NAN);
        Q8KActs a_isa;
        quantize_acts_q8k(x.data(), s.n_tok, s.n_in, a_isa);
        EXPECT_EQ(a_isa.q, a.q) << what << " " << isa_name(isa);
        EXPECT_EQ(a_isa.d, a.d) << what << " " << isa_name(isa);
        EXPECT_EQ(a_isa.bsum, a.bsum) << what << " " << isa_name(isa);
        EXPECT_EQ(a_isa.bsum_pairs, a.bsum_pairs) << what << " " << isa_name(isa);
        matmul_q8k(type, w.data(), s.n_out, s.n_in, a, y_isa.data());
        detail::matmul_q8k_portable(type, w.data(), s.n_out, s.n_in, a, y_port.data());
        matmul(type, w.data(), s.n_out, s.n_in, x.data(), s.n_tok, y_mm.data());
        EXPECT_TRUE(same_bits(y, y_isa)) << what << ": " << isa_name(isa);
        EXPECT_TRUE(same_bits(y, y_port)) << what << ": portable in " << isa_name(isa);
        EXPECT_TRUE(same_bits(y, y_mm)) << what << ": matmul in " << isa_name(isa);
      }
    }
  }
}

// The largest integers the lanes can hold: every code, scale and activation at its extreme.
TEST(MatmulQ8K, ExtremeBlocks) {
  IsaGuard guard;
  for (const DType type : kKTypes) {
    const DTypeInfo& info = dtype_info(type);
    int d_off = 0, min_off = -1;
    f16_fields(type, &d_off, &min_off);
    for (const uint8_t fill : {0x00, 0xff, 0x80, 0x7f}) {
      std::vector<uint8_t> w(static_cast<size_t>(2 * info.block_bytes), fill);  // [2, 256]
      const uint16_t d = fp32_to_fp16(0.01f), m = fp32_to_fp16(0.03f);
      for (int b = 0; b < 2; ++b) {
        std::memcpy(w.data() + b * info.block_bytes + d_off, &d, 2);
        if (min_off >= 0) std::memcpy(w.data() + b * info.block_bytes + min_off, &m, 2);
      }
      for (const float xv : {-1.0f, 1.0f}) {
        const std::vector<float> x(512, xv);  // [2, 256]: every q = -128 (d = -xv / 128)
        Q8KActs a;
        quantize_acts_q8k(x.data(), 2, 256, a);
        const std::string what = std::string(dtype_name(type)) + " fill=" + std::to_string(fill) +
                                 " x=" + std::to_string(xv);
        std::vector<float> y(4, NAN);  // [2 tokens, 2 rows]
        matmul_q8k(type, w.data(), 2, 256, a, y.data());
        expect_matches_dequantized_dot(type, w, 2, 256, a, y, what);
        for (const Isa isa : available_isas()) {
          set_active_isa(isa);
          std::vector<float> y_isa(4, NAN), y_port(4, NAN);
          matmul_q8k(type, w.data(), 2, 256, a, y_isa.data());
          detail::matmul_q8k_portable(type, w.data(), 2, 256, a, y_port.data());
          EXPECT_TRUE(same_bits(y, y_isa)) << what << ": " << isa_name(isa);
          EXPECT_TRUE(same_bits(y, y_port)) << what << ": portable in " << isa_name(isa);
        }
      }
    }
  }
}

// (c): each activation moves by at most one quantization step |d| (half a step, or a full one
// for the value clamped from 128 to 127), so |y - y_f32| <= sum_i |w_i| |d_b(i)| + rounding.
TEST(MatmulQ8K, CloseToTheExactProduct) {
  std::mt19937 rng(99);
  const int64_t n_in = 768, n_out = 11, n_tok = 3, nb = n_in / 256;
  for (const DType type : kKTypes) {
    const std::vector<uint8_t> w = make_weights(type, n_out, n_in, rng);
    const std::vector<float> x = make_activations(n_tok * n_in, rng);
    std::vector<float> y(n_tok * n_out);
    matmul(type, w.data(), n_out, n_in, x.data(), n_tok, y.data());
    Q8KActs a;
    quantize_acts_q8k(x.data(), n_tok, n_in, a);
    const std::vector<float> wf = dequantize_rows(type, w, n_out, n_in);
    for (int64_t o = 0; o < n_out; ++o) {
      for (int64_t t = 0; t < n_tok; ++t) {
        double exact = 0.0, bound = 0.0;
        for (int64_t i = 0; i < n_in; ++i) {
          const double wi = wf[o * n_in + i], xi = x[t * n_in + i];
          exact += wi * xi;
          bound += std::fabs(wi) * (std::fabs(a.d[t * nb + i / 256]) + std::fabs(xi) * 1e-5);
        }
        EXPECT_LE(std::fabs(y[t * n_out + o] - exact), bound) << dtype_name(type) << " o=" << o;
      }
    }
  }
}

}  // namespace
}  // namespace fasa
