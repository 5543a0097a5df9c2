// matmul_multi (kernels/matmul.h): a fused call over matrices that share their input gives every
// job exactly the bits of its own matmul call, for each weight type and mixed types in one call,
// 1 to 3 threads, 1, 3 and 17 tokens, every instruction set; and it opens one parallel region.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fasa/core/dtype.h"
#include "fasa/core/f16.h"
#include "fasa/core/isa.h"
#include "fasa/core/parallel.h"
#include "fasa/kernels/matmul.h"
#include "fasa/kernels/repack.h"
#include "support/isa_guard.h"

namespace fasa {
namespace {

struct ThreadCountGuard {
  int saved = num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

constexpr int64_t kNIn = 512;  // a multiple of both block sizes (32, 256)

// Random weights [n_out, kNIn] of `type`: random quant bytes with small fp16 scales (and mins) at
// each block's scale fields, or normal values for F16.
std::vector<uint8_t> make_weights(DType type, int64_t n_out, std::mt19937& rng) {
  if (is_repacked(type)) {  // GGUF rows of the base type, interleaved (kernels/repack.h)
    const std::vector<uint8_t> rows = make_weights(gguf_type(type), n_out, rng);
    const DTypeInfo& ri = dtype_info(type);
    std::vector<uint8_t> w(static_cast<size_t>(n_out * kNIn / ri.block_elems * ri.block_bytes));
    repack_rows16(gguf_type(type), rows.data(), n_out, kNIn, w.data());
    return w;
  }
  const DTypeInfo& info = dtype_info(type);
  const int64_t n_blocks = n_out * kNIn / info.block_elems;
  std::vector<uint8_t> w(static_cast<size_t>(n_blocks * info.block_bytes));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (type == DType::F16) {
    for (int64_t i = 0; i < n_out * kNIn; ++i) {
      const uint16_t h = fp32_to_fp16(normal(rng));
      std::memcpy(w.data() + 2 * i, &h, 2);
    }
    return w;
  }
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  const int scale_off = type == DType::Q6_K ? 208 : 0;
  const int min_off = type == DType::Q4_1 || type == DType::Q4_K ? 2 : -1;
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = w.data() + b * info.block_bytes;
    uint16_t h = fp32_to_fp16(scale(rng));
    std::memcpy(blk + scale_off, &h, 2);
    if (min_off >= 0) {
      h = fp32_to_fp16(scale(rng) * 10.0f);
      std::memcpy(blk + min_off, &h, 2);
    }
  }
  return w;
}

struct Mat {
  DType type;
  int64_t n_out;
  std::vector<uint8_t> w;  // [n_out, kNIn]
};

std::vector<Mat> make_mats(const std::vector<std::pair<DType, int64_t>>& shapes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Mat> mats;
  for (const auto& [type, n_out] : shapes)
    mats.push_back({type, n_out, make_weights(type, n_out, rng)});
  return mats;
}

// ys[j]: [n_tok, n_out_j], NaN-filled so a row nobody wrote shows up as a mismatch.
std::vector<std::vector<float>> fresh_outputs(const std::vector<Mat>& mats, int64_t n_tok) {
  std::vector<std::vector<float>> ys;
  for (const Mat& m : mats) ys.emplace_back(static_cast<size_t>(n_tok * m.n_out), NAN);
  return ys;
}

std::vector<std::vector<float>> run_separate(const std::vector<Mat>& mats, const float* x,
                                             int64_t n_tok, MatmulTiles tiles) {
  auto ys = fresh_outputs(mats, n_tok);
  for (size_t j = 0; j < mats.size(); ++j) {
    matmul(mats[j].type, mats[j].w.data(), mats[j].n_out, kNIn, x, n_tok, ys[j].data(), tiles);
  }
  return ys;
}

std::vector<std::vector<float>> run_fused(const std::vector<Mat>& mats, const float* x,
                                          int64_t n_tok, MatmulTiles tiles) {
  auto ys = fresh_outputs(mats, n_tok);
  std::vector<MatmulJob> jobs;
  for (size_t j = 0; j < mats.size(); ++j) {
    jobs.push_back({mats[j].type, mats[j].w.data(), mats[j].n_out, ys[j].data()});
  }
  matmul_multi(jobs.data(), static_cast<int>(jobs.size()), kNIn, x, n_tok, tiles);
  return ys;
}

int64_t bit_mismatches(const std::vector<std::vector<float>>& a,
                       const std::vector<std::vector<float>>& b) {
  int64_t bad = 0;
  for (size_t j = 0; j < a.size(); ++j) {
    for (size_t i = 0; i < a[j].size(); ++i) bad += std::memcmp(&a[j][i], &b[j][i], 4) != 0;
  }
  return bad;
}

// Activations [n_tok, kNIn] drawn from N(0, 1).
std::vector<float> normal_acts(int64_t n_tok, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_tok * kNIn));
  for (float& v : x) v = normal(rng);
  return x;
}

struct Combo {
  const char* name;
  std::vector<std::pair<DType, int64_t>> shapes;  // (type, n_out) per job, in call order
};

// Row counts that are not multiples of 4 split the concatenated row groups mid-job; the tiny
// combo stays under the one-thread threshold.
const Combo kCombos[] = {
    {"Q4_0", {{DType::Q4_0, 96}, {DType::Q4_0, 37}, {DType::Q4_0, 13}}},
    {"Q4_1", {{DType::Q4_1, 96}, {DType::Q4_1, 37}, {DType::Q4_1, 13}}},
    {"Q8_0", {{DType::Q8_0, 96}, {DType::Q8_0, 37}, {DType::Q8_0, 13}}},
    {"Q4_K", {{DType::Q4_K, 96}, {DType::Q4_K, 37}, {DType::Q4_K, 13}}},
    {"Q6_K", {{DType::Q6_K, 96}, {DType::Q6_K, 37}, {DType::Q6_K, 13}}},
    {"F16", {{DType::F16, 96}, {DType::F16, 37}}},
    {"Mixed",
     {{DType::Q4_K, 70}, {DType::Q8_0, 21}, {DType::F16, 9}, {DType::Q6_K, 30}, {DType::Q4_0, 6}}},
    {"Tiny", {{DType::Q4_0, 5}, {DType::Q6_K, 3}}},
    // Repacked slices must start at 16-row groups whatever the split.
    {"Repacked",
     {{DType::Q4_K_R16, 96}, {DType::Q6_K_R16, 48}, {DType::Q4_K, 37}, {DType::Q4_K_R16, 32}}},
    {"RepackedBlockQuants",
     {{DType::Q4_1_R16, 96}, {DType::Q8_0_R16, 48}, {DType::Q4_1, 37}, {DType::Q4_0_R16, 32}}},
};

// Readable names in failure messages instead of gtest's byte dump.
void PrintTo(const Combo& c, std::ostream* os) { *os << c.name; }

class MatmulMulti : public ::testing::TestWithParam<Combo> {};

// Fused == separate calls, bitwise: 1, 2, 3 threads; 1, 3, 17 tokens; both tile classes; every
// instruction set this CPU runs.
TEST_P(MatmulMulti, EqualsSeparateCallsBitwise) {
  const Combo& c = GetParam();
  ThreadCountGuard threads;
  IsaGuard isa_guard;
  const std::vector<Mat> mats = make_mats(c.shapes, 31);
  std::mt19937 rng(7);
  for (const int64_t n_tok : {1, 3, 17}) {
    const std::vector<float> x = normal_acts(n_tok, rng);  // [n_tok, kNIn]
    for (const MatmulTiles tiles : {MatmulTiles::kPerToken, MatmulTiles::kAny}) {
      for (const Isa isa : available_isas()) {
        set_active_isa(isa);
        set_num_threads(1);
        const auto want = run_separate(mats, x.data(), n_tok, tiles);
        for (const int nt : {1, 2, 3}) {
          set_num_threads(nt);
          const auto got = run_fused(mats, x.data(), n_tok, tiles);
          EXPECT_EQ(bit_mismatches(want, got), 0)
              << c.name << " n_tok=" << n_tok << " threads=" << nt << " " << isa_name(isa)
              << (tiles == MatmulTiles::kAny ? " kAny" : " kPerToken");
        }
      }
    }
  }
}

// In a team's collective code (core/parallel.h: the forward pass of a decode step) every worker
// makes the calls: fused and separate calls split their rows over the team, and products under
// the one-thread threshold run on one worker. The bits equal one thread's calls.
TEST_P(MatmulMulti, InATeamEqualsOneThreadBitwise) {
  const Combo& c = GetParam();
  ThreadCountGuard threads;
  IsaGuard isa_guard;
  const std::vector<Mat> mats = make_mats(c.shapes, 41);
  std::mt19937 rng(9);
  for (const int64_t n_tok : {1, 3}) {
    const std::vector<float> x = normal_acts(n_tok, rng);  // [n_tok, kNIn]
    for (const Isa isa : available_isas()) {
      set_active_isa(isa);
      set_num_threads(1);
      const auto want = run_separate(mats, x.data(), n_tok, MatmulTiles::kPerToken);
      for (const int nt : {2, 3}) {
        set_num_threads(nt);
        auto fused = fresh_outputs(mats, n_tok), separate = fresh_outputs(mats, n_tok);
        std::vector<MatmulJob> jobs;
        for (size_t j = 0; j < mats.size(); ++j) {
          jobs.push_back({mats[j].type, mats[j].w.data(), mats[j].n_out, fused[j].data()});
        }
        parallel_team([&] {  // shared outputs, as the forward pass's
          matmul_multi(jobs.data(), static_cast<int>(jobs.size()), kNIn, x.data(), n_tok,
                       MatmulTiles::kPerToken);
          for (size_t j = 0; j < mats.size(); ++j) {
            matmul(mats[j].type, mats[j].w.data(), mats[j].n_out, kNIn, x.data(), n_tok,
                   separate[j].data(), MatmulTiles::kPerToken);
          }
        });
        EXPECT_EQ(bit_mismatches(want, fused), 0)
            << c.name << " fused n_tok=" << n_tok << " threads=" << nt << " " << isa_name(isa);
        EXPECT_EQ(bit_mismatches(want, separate), 0)
            << c.name << " separate n_tok=" << n_tok << " threads=" << nt << " " << isa_name(isa);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, MatmulMulti, ::testing::ValuesIn(kCombos),
                         [](const auto& info) { return std::string(info.param.name); });

// The point of the fused call: quantized jobs share one parallel region (separate calls open one
// each, above the one-thread threshold of 65536 multiply-adds); a float job keeps its own call.
TEST(MatmulMultiRegions, QuantizedJobsShareOneRegion) {
  ThreadCountGuard threads;
  set_num_threads(2);
  const std::vector<Mat> quant =
      make_mats({{DType::Q4_K, 160}, {DType::Q8_0, 160}, {DType::Q6_K, 160}}, 5);
  std::vector<float> x(kNIn, 0.5f);  // [1, kNIn]
  ParallelStats before = parallel_stats();
  run_separate(quant, x.data(), 1, MatmulTiles::kPerToken);
  EXPECT_EQ((parallel_stats() - before).dispatches, 3u);
  before = parallel_stats();
  run_fused(quant, x.data(), 1, MatmulTiles::kPerToken);
  EXPECT_EQ((parallel_stats() - before).dispatches, 1u);

  const std::vector<Mat> mixed = make_mats({{DType::Q4_0, 160}, {DType::F16, 160}}, 6);
  before = parallel_stats();
  run_fused(mixed, x.data(), 1, MatmulTiles::kPerToken);
  EXPECT_EQ((parallel_stats() - before).dispatches, 2u);
}

TEST(MatmulMultiRegions, NoJobsOrNoTokensWriteNothing) {
  const std::vector<Mat> mats = make_mats({{DType::Q4_0, 8}}, 9);
  std::vector<float> x(kNIn, 1.0f), y(8, 123.0f);
  MatmulJob job{DType::Q4_0, mats[0].w.data(), 8, y.data()};
  matmul_multi(&job, 1, kNIn, x.data(), 0);
  matmul_multi(&job, 0, kNIn, x.data(), 1);
  MatmulJob empty{DType::Q4_0, mats[0].w.data(), 0, y.data()};
  matmul_multi(&empty, 1, kNIn, x.data(), 1);
  for (const float v : y) EXPECT_EQ(v, 123.0f);
}

}  // namespace
}  // namespace fasa
