// matmul: fast path against the double-precision reference for every supported weight type at
// odd sizes; bitwise determinism across thread counts, batch vs single token, and SIMD vs
// portable paths, and across instruction sets. Speed: fasa_microbench (BM_Matmul).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fasa/core/dtype.h"
#include "fasa/core/f16.h"
#include "fasa/core/parallel.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul.h"
#include "support/isa_guard.h"
#include "support/ref/kernels_ref.h"

namespace fasa {
namespace {

// Restores the thread count a test changed.
struct ThreadCountGuard {
  int saved = num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

// Random weights [n_out, n_in] of `type`: random quant bytes with small finite fp16 scales and
// mins (offsets of the fp16 fields per block), or random normal values for float types.
std::vector<uint8_t> make_weights(DType type, int64_t n_out, int64_t n_in, std::mt19937& rng) {
  const DTypeInfo& info = dtype_info(type);
  const int64_t n_blocks = n_out * n_in / info.block_elems;
  std::vector<uint8_t> w(static_cast<size_t>(n_blocks * info.block_bytes));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  std::uniform_real_distribution<float> min(-0.5f, 0.5f);
  const int64_t n = n_out * n_in;
  switch (type) {
    case DType::F32:
      for (int64_t i = 0; i < n; ++i) {
        const float v = normal(rng);
        std::memcpy(w.data() + 4 * i, &v, 4);
      }
      return w;
    case DType::F16:
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const float v = normal(rng);
        const uint16_t h = type == DType::F16 ? fp32_to_fp16(v) : fp32_to_bf16(v);
        std::memcpy(w.data() + 2 * i, &h, 2);
      }
      return w;
    default: break;
  }
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  int scale_off = 0;
  int min_off = -1;
  switch (type) {
    case DType::Q4_1:
    case DType::Q5_1: min_off = 2; break;
    case DType::Q6_K: scale_off = 208; break;
    case DType::Q2_K:
      scale_off = 80;
      min_off = 82;
      break;
    case DType::Q3_K: scale_off = 108; break;
    case DType::Q4_K:
    case DType::Q5_K: min_off = 2; break;
    default: break;
  }
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = w.data() + b * info.block_bytes;
    const uint16_t d = fp32_to_fp16(scale(rng));
    std::memcpy(blk + scale_off, &d, 2);
    if (min_off >= 0) {
      const uint16_t m = fp32_to_fp16(min(rng));
      std::memcpy(blk + min_off, &m, 2);
    }
  }
  return w;
}

std::vector<float> make_activations(int64_t n_tok, int64_t n_in, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_tok * n_in));  // [n_tok, n_in]
  for (auto& v : x) v = normal(rng);
  return x;
}

int64_t count_bit_mismatches(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  int64_t bad = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    bad += std::memcmp(&a[i], &b[i], 4) != 0 ? 1 : 0;
  }
  return bad;
}

const DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                        DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                        DType::Q4_K, DType::Q5_K, DType::Q6_K};

std::vector<int64_t> n_in_sizes(DType type) {
  switch (dtype_info(type).block_elems) {
    case 1: return {1, 7, 32, 33, 96, 576};  // float types: SIMD tails too
    case 256: return {256, 512};
    default: return {32, 96, 576};
  }
}

class MatmulVsRef : public ::testing::TestWithParam<DType> {};

// |y - y_ref| <= 1e-4 * sum_i |W[o, i] x[t, i]|: relative error of the dot product measured
// against the sum of magnitudes, which stays meaningful when the terms cancel.
TEST_P(MatmulVsRef, OddSizes) {
  const DType type = GetParam();
  std::mt19937 rng(1000 + static_cast<int>(type));
  for (const int64_t n_in : n_in_sizes(type)) {
    for (const int64_t n_out : {1, 3, 17, 191}) {
      const std::vector<uint8_t> w = make_weights(type, n_out, n_in, rng);  // [n_out, n_in]
      std::vector<float> wf(static_cast<size_t>(n_out * n_in));             // [n_out, n_in]
      const int64_t row_bytes = n_in / dtype_info(type).block_elems * dtype_info(type).block_bytes;
      for (int64_t o = 0; o < n_out; ++o) {
        ref::dequantize_row(type, w.data() + o * row_bytes, wf.data() + o * n_in, n_in);
      }
      for (const int64_t n_tok : {1, 2, 5, 33}) {
        const std::vector<float> x = make_activations(n_tok, n_in, rng);  // [n_tok, n_in]
        std::vector<float> y(static_cast<size_t>(n_tok * n_out), NAN);    // [n_tok, n_out]
        std::vector<float> y_ref(y.size()), y_port(y.size(), NAN);        // [n_tok, n_out]
        matmul(type, w.data(), n_out, n_in, x.data(), n_tok, y.data());
        ref::matmul(type, w.data(), n_out, n_in, x.data(), n_tok, y_ref.data());
        detail::matmul_portable(type, w.data(), n_out, n_in, x.data(), n_tok, y_port.data());
        int64_t bad = 0;
        for (int64_t t = 0; t < n_tok; ++t) {
          for (int64_t o = 0; o < n_out; ++o) {
            double mag = 0.0;
            for (int64_t i = 0; i < n_in; ++i) {
              mag += std::fabs(static_cast<double>(wf[o * n_in + i]) * x[t * n_in + i]);
            }
            const float got = y[t * n_out + o];
            const float want = y_ref[t * n_out + o];
            if (!(std::fabs(static_cast<double>(got) - want) <= 1e-4 * mag + 1e-30) && bad++ == 0) {
              ADD_FAILURE() << dtype_name(type) << " n_in=" << n_in << " n_out=" << n_out
                            << " n_tok=" << n_tok << " t=" << t << " o=" << o << ": got " << got
                            << " want " << want << " (sum |w x| = " << mag << ")";
            }
          }
        }
        EXPECT_EQ(bad, 0);
        EXPECT_EQ(count_bit_mismatches(y, y_port), 0)
            << "SIMD vs portable: " << dtype_name(type) << " n_in=" << n_in << " n_out=" << n_out
            << " n_tok=" << n_tok;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Matmul, MatmulVsRef, ::testing::ValuesIn(kTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

class MatmulDeterminism : public ::testing::TestWithParam<DType> {};

// Bitwise: 1 vs 2 vs 3 threads; a batch vs each token alone vs a sub-batch; SIMD vs portable.
TEST_P(MatmulDeterminism, ThreadsAndBatching) {
  const DType type = GetParam();
  ThreadCountGuard guard;
  std::mt19937 rng(77 + static_cast<int>(type));
  const int64_t block = dtype_info(type).block_elems;
  // Shapes: the model-like one, one whose tokens span several token tiles, one with a SIMD tail.
  struct Shape {
    int64_t n_out, n_in, n_tok;
  };
  std::vector<Shape> shapes = {{191, block == 256 ? 512 : 576, 33}, {37, 4096, 70}};
  if (block == 1) shapes.push_back({45, 101, 19});
  for (const Shape& s : shapes) {
    const std::vector<uint8_t> w = make_weights(type, s.n_out, s.n_in, rng);  // [n_out, n_in]
    const std::vector<float> x = make_activations(s.n_tok, s.n_in, rng);      // [n_tok, n_in]
    const size_t n_y = static_cast<size_t>(s.n_tok * s.n_out);
    std::vector<float> y1(n_y), y2(n_y, NAN), y3(n_y, NAN);  // [n_tok, n_out] each
    std::vector<float> y_single(n_y, NAN), y_sub(n_y), y_port(n_y, NAN);
    set_num_threads(1);
    matmul(type, w.data(), s.n_out, s.n_in, x.data(), s.n_tok, y1.data());
    // One token at a time on one thread (many small calls; forking for each is slow on a
    // shared machine). Together with 1 vs 2 threads below this covers both properties.
    for (int64_t t = 0; t < s.n_tok; ++t) {
      matmul(type, w.data(), s.n_out, s.n_in, x.data() + t * s.n_in, 1,
             y_single.data() + t * s.n_out);
    }
    set_num_threads(2);
    matmul(type, w.data(), s.n_out, s.n_in, x.data(), s.n_tok, y2.data());
    // Tokens [5, 12) as their own batch on two threads; the rest copied from y1.
    y_sub = y1;
    matmul(type, w.data(), s.n_out, s.n_in, x.data() + 5 * s.n_in, 7, y_sub.data() + 5 * s.n_out);
    set_num_threads(3);
    matmul(type, w.data(), s.n_out, s.n_in, x.data(), s.n_tok, y3.data());
    detail::matmul_portable(type, w.data(), s.n_out, s.n_in, x.data(), s.n_tok, y_port.data());
    const std::string what = std::string(dtype_name(type)) + " n_out=" + std::to_string(s.n_out) +
                             " n_in=" + std::to_string(s.n_in);
    EXPECT_EQ(count_bit_mismatches(y1, y2), 0) << what << ": 1 vs 2 threads";
    EXPECT_EQ(count_bit_mismatches(y1, y3), 0) << what << ": 1 vs 3 threads";
    EXPECT_EQ(count_bit_mismatches(y1, y_single), 0) << what << ": batch vs one token at a time";
    EXPECT_EQ(count_bit_mismatches(y1, y_sub), 0) << what << ": batch vs sub-batch";
    EXPECT_EQ(count_bit_mismatches(y1, y_port), 0) << what << ": SIMD vs portable";
    // Every instruction set this CPU runs: the same bits, for matmul and for dequantization.
    IsaGuard isa_guard;
    const int64_t row_bytes = s.n_in / block * dtype_info(type).block_bytes;
    std::vector<float> row_best(s.n_in);
    dequantize_row(type, w.data() + row_bytes, row_best.data(), s.n_in);
    for (const Isa isa : available_isas()) {
      set_active_isa(isa);
      std::vector<float> y_isa(n_y, NAN), row(s.n_in, NAN);
      matmul(type, w.data(), s.n_out, s.n_in, x.data(), s.n_tok, y_isa.data());
      dequantize_row(type, w.data() + row_bytes, row.data(), s.n_in);
      EXPECT_EQ(count_bit_mismatches(y1, y_isa), 0) << what << ": " << isa_name(isa);
      EXPECT_EQ(count_bit_mismatches(row_best, row), 0) << what << ": dequant " << isa_name(isa);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Matmul, MatmulDeterminism, ::testing::ValuesIn(kTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(MatmulEdge, ZeroTokensOrRowsWriteNothing) {
  std::mt19937 rng(5);
  const std::vector<uint8_t> w = make_weights(DType::Q8_0, 4, 32, rng);
  const std::vector<float> x = make_activations(2, 32, rng);
  std::vector<float> y(8, 123.0f);
  matmul(DType::Q8_0, w.data(), 4, 32, x.data(), 0, y.data());
  matmul(DType::Q8_0, w.data(), 0, 32, x.data(), 2, y.data());
  for (const float v : y) EXPECT_EQ(v, 123.0f);
}

}  // namespace
}  // namespace fasa
