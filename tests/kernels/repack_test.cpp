// Repacked layouts (kernels/repack.h) of the K-quants and the 32-block quants: every block
// rebuilt byte for byte, and a repacked matrix giving the same bits as its GGUF rows on every
// path (16-row kernels, the unpacked path at more tokens, portable, every instruction set, AMX
// tiles).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "fasa/core/amx.h"
#include "fasa/core/dtype.h"
#include "fasa/core/f16.h"
#include "fasa/core/isa.h"
#include "fasa/core/parallel.h"
#include "fasa/kernels/matmul.h"
#include "fasa/kernels/matmul_amx.h"
#include "fasa/kernels/matmul_q8.h"
#include "fasa/kernels/matmul_q8k.h"
#include "fasa/kernels/repack.h"
#include "support/amx_env.h"
#include "support/isa_guard.h"

namespace fasa {
namespace {

// The fp16 fields of a block (d, and dmin or m) at their byte offsets.
std::vector<int> half_offsets(DType t) {
  switch (t) {
    case DType::Q4_K:
    case DType::Q4_1: return {0, 2};
    case DType::Q6_K: return {208};
    default: return {0};  // Q4_0, Q8_0
  }
}

// Random bytes with small finite fp16 d (and dmin / m): [n_out, n_in] of a repackable type.
std::vector<uint8_t> random_rows(DType t, int64_t n_out, int64_t n_in, std::mt19937& rng) {
  const int64_t bb = dtype_info(t).block_bytes;
  const int64_t n_blocks = n_out * n_in / dtype_info(t).block_elems;
  std::vector<uint8_t> w(static_cast<size_t>(n_blocks * bb));
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = w.data() + b * bb;
    for (int off : half_offsets(t)) {
      const uint16_t h = fp32_to_fp16(scale(rng));
      std::memcpy(blk + off, &h, 2);
    }
  }
  return w;
}

std::vector<uint8_t> repacked(DType t, const std::vector<uint8_t>& w, int64_t n_out, int64_t n_in) {
  std::vector<uint8_t> r(static_cast<size_t>(n_out * n_in / dtype_info(t).block_elems *
                                             dtype_info(repacked_type(t)).block_bytes));
  repack_rows16(t, w.data(), n_out, n_in, r.data());
  return r;
}

// A random matrix in both layouts and random activations, quantized as Acts: Q8KActs for the
// K-quants, Q8Acts for the 32-block quants.
template <typename Acts>
struct CaseOf {
  std::vector<uint8_t> w, r;  // GGUF rows, repacked
  std::vector<float> x;       // [n_tok, n_in]
  Acts a;
};
template <typename Acts>
CaseOf<Acts> make_case_of(DType t, int64_t n_out, int64_t n_in, int64_t n_tok, std::mt19937& rng) {
  CaseOf<Acts> c;
  c.w = random_rows(t, n_out, n_in, rng);
  c.r = repacked(t, c.w, n_out, n_in);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  c.x.resize(static_cast<size_t>(n_tok * n_in));
  for (auto& v : c.x) v = nd(rng);
  if constexpr (std::is_same_v<Acts, Q8KActs>) {
    quantize_acts_q8k(c.x.data(), n_tok, n_in, c.a);
  } else {
    quantize_acts_q8(c.x.data(), n_tok, n_in, c.a);
  }
  return c;
}
using Case = CaseOf<Q8KActs>;
Case make_case(DType t, int64_t n_out, int64_t n_in, int64_t n_tok, std::mt19937& rng) {
  return make_case_of<Q8KActs>(t, n_out, n_in, n_tok, rng);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

// f(at) on every available instruction set with 1 and 2 threads; at names the setting.
template <typename F>
void on_every_isa_and_thread_count(const std::string& what, F&& f) {
  for (const Isa isa : available_isas()) {
    set_active_isa(isa);
    for (int threads : {1, 2}) {
      const int saved = num_threads();
      set_num_threads(threads);
      f(what + " " + std::string(isa_name(isa)) + " threads=" + std::to_string(threads));
      set_num_threads(saved);
    }
  }
}

TEST(Repack, Types) {
  EXPECT_TRUE(repackable(DType::Q4_K, 32, 512));
  EXPECT_TRUE(repackable(DType::Q6_K, 16, 256));
  EXPECT_FALSE(repackable(DType::Q4_K, 24, 512));  // not whole groups of 16 rows
  EXPECT_FALSE(repackable(DType::Q5_K, 32, 512));
  EXPECT_FALSE(repackable(DType::Q5_0, 32, 512));
  EXPECT_TRUE(repackable(DType::Q8_0, 32, 64));
  EXPECT_TRUE(repackable(DType::Q4_1, 16, 32));
  EXPECT_FALSE(repackable(DType::Q4_0, 16, 48));  // not whole 32-blocks
  EXPECT_FALSE(repackable(DType::Q4_1, 8, 64));
  EXPECT_EQ(repacked_type(DType::Q4_K), DType::Q4_K_R16);
  EXPECT_EQ(repacked_type(DType::Q4_1), DType::Q4_1_R16);
  EXPECT_EQ(gguf_type(DType::Q6_K_R16), DType::Q6_K);
  EXPECT_EQ(gguf_type(DType::Q8_0_R16), DType::Q8_0);
  EXPECT_EQ(gguf_type(DType::Q8_0), DType::Q8_0);
  for (DType t : {DType::Q4_K, DType::Q6_K, DType::Q4_0, DType::Q4_1, DType::Q8_0}) {
    const DTypeInfo& a = dtype_info(t);
    const DTypeInfo& b = dtype_info(repacked_type(t));
    EXPECT_TRUE(b.engine_only);
    EXPECT_FALSE(a.engine_only);
    EXPECT_TRUE(is_repacked(repacked_type(t)));
    EXPECT_FALSE(is_repacked(t));
    EXPECT_EQ(b.block_elems, a.block_elems) << a.name;
    EXPECT_EQ(group_block_bytes(repacked_type(t)), 16 * b.block_bytes) << a.name;
    const bool kquant = a.block_elems == 256;
    EXPECT_EQ(has_q8k_path(repacked_type(t)), kquant) << a.name;
    EXPECT_EQ(has_q8_path(repacked_type(t)), !kquant) << a.name;
  }
}

// Every row's every block comes back byte for byte (the Q4_K scales are decoded in the layout and
// encoded again: all 96 bits of the 12 scale bytes are used, so that is a bijection).
TEST(Repack, BlocksRebuildExactly) {
  std::mt19937 rng(7);
  for (DType t : {DType::Q4_K, DType::Q6_K, DType::Q4_0, DType::Q4_1, DType::Q8_0}) {
    const int64_t n_out = 48, n_in = 768, bb = dtype_info(t).block_bytes;
    const int64_t nb = n_in / dtype_info(t).block_elems;
    const std::vector<uint8_t> w = random_rows(t, n_out, n_in, rng);
    const std::vector<uint8_t> r = repacked(t, w, n_out, n_in);
    EXPECT_NE(w, r);
    int bad = 0;
    for (int64_t row = 0; row < n_out; ++row) {
      for (int64_t b = 0; b < nb; ++b) {
        uint8_t blk[256];
        gguf_block_of(repacked_type(t), r.data(), nb, row, b, blk);
        bad += std::memcmp(blk, w.data() + (row * nb + b) * bb, bb) != 0;
      }
    }
    EXPECT_EQ(bad, 0) << dtype_name(t);
  }
}

// The same bits as the GGUF rows: 1-3 tokens (16-row kernels where AVX-512 has them), more
// tokens (blocks rebuilt and unpacked), portable, every instruction set, any thread count.
TEST(Repack, MatmulSameBitsAsGgufRows) {
  std::mt19937 rng(11);
  IsaGuard guard;
  for (DType t : {DType::Q4_K, DType::Q6_K}) {
    // Token tiles of 4 (matmul_q8k.isa.cpp): whole ones, and whole ones with 1 to 3 more.
    for (int64_t n_tok : {1, 2, 3, 5, 8, 12, 17}) {
      const int64_t n_out = 48, n_in = 1024;
      const Case k = make_case(t, n_out, n_in, n_tok, rng);
      const std::vector<uint8_t>& w = k.w;
      const std::vector<uint8_t>& r = k.r;
      const std::vector<float>& x = k.x;
      const Q8KActs& a = k.a;
      std::vector<float> want(static_cast<size_t>(n_tok * n_out), NAN);
      detail::matmul_q8k_portable(t, w.data(), n_out, n_in, a, want.data());
      const std::string what = std::string(dtype_name(t)) + " n_tok=" + std::to_string(n_tok);
      on_every_isa_and_thread_count(what, [&](const std::string& at) {
        std::vector<float> y(want.size(), NAN), y_port(want.size(), NAN), y_mm(want.size(), NAN);
        matmul_q8k(repacked_type(t), r.data(), n_out, n_in, a, y.data());
        detail::matmul_q8k_portable(repacked_type(t), r.data(), n_out, n_in, a, y_port.data());
        matmul(repacked_type(t), r.data(), n_out, n_in, x.data(), n_tok, y_mm.data(),
               MatmulTiles::kPerToken);
        EXPECT_TRUE(same_bits(want, y)) << at;
        EXPECT_TRUE(same_bits(want, y_port)) << at << " portable";
        EXPECT_TRUE(same_bits(want, y_mm)) << at << " matmul";
      });
    }
  }
}

// The 32-block quants: the same bits as the GGUF rows at 1, 2, 3, 5 and 17 tokens (the 16-row
// kernels take 2 tokens a pass: whole passes and one token more), on every instruction set,
// portable, 1 and 2 threads, through matmul and through fused slices of whole groups.
TEST(Repack, BlockQuantsSameBitsAsGgufRows) {
  std::mt19937 rng(17);
  IsaGuard guard;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0}) {
    for (int64_t n_tok : {1, 2, 3, 5, 17}) {
      const int64_t n_out = 48, n_in = 256;
      const CaseOf<Q8Acts> k = make_case_of<Q8Acts>(t, n_out, n_in, n_tok, rng);
      const std::vector<uint8_t>& w = k.w;
      const std::vector<uint8_t>& r = k.r;
      const std::vector<float>& x = k.x;
      const Q8Acts& a = k.a;
      std::vector<float> want(static_cast<size_t>(n_tok * n_out), NAN);
      detail::matmul_q8_portable(t, w.data(), n_out, n_in, a, want.data());
      const DType rt = repacked_type(t);
      const std::string what = std::string(dtype_name(t)) + " n_tok=" + std::to_string(n_tok);
      std::vector<float> y(want.size()), y_port(want.size()), y_mm(want.size());
      std::vector<float> y_rows(want.size());
      on_every_isa_and_thread_count(what, [&](const std::string& at) {
        for (auto* v : {&y, &y_port, &y_mm, &y_rows}) std::fill(v->begin(), v->end(), NAN);
        matmul_q8(rt, r.data(), n_out, n_in, a, y.data());
        detail::matmul_q8_portable(rt, r.data(), n_out, n_in, a, y_port.data());
        matmul(rt, r.data(), n_out, n_in, x.data(), n_tok, y_mm.data(), MatmulTiles::kPerToken);
        matmul_q8_rows(rt, r.data(), n_out, n_in, a, 0, 16, y_rows.data());
        matmul_q8_rows(rt, r.data(), n_out, n_in, a, 16, 48, y_rows.data());
        EXPECT_TRUE(same_bits(want, y)) << at;
        EXPECT_TRUE(same_bits(want, y_port)) << at << " portable";
        EXPECT_TRUE(same_bits(want, y_mm)) << at << " matmul";
        EXPECT_TRUE(same_bits(want, y_rows)) << at << " rows";
      });
    }
  }
}

// AMX tiles unpack repacked blocks to the same integers: the same bits as on the GGUF rows.
TEST(Repack, AmxSameBitsAsGgufRows) {
  if (!amx_supported()) GTEST_SKIP() << "no AMX here: " << amx_status();
  test::AmxEnv amx(true);
  IsaGuard guard;
  set_active_isa(Isa::Avx512);
  std::mt19937 rng(13);
  for (DType t : {DType::Q4_K, DType::Q6_K}) {
    const int64_t n_out = 32, n_in = 512, n_tok = 20;
    const Case k = make_case(t, n_out, n_in, n_tok, rng);
    std::vector<float> want(static_cast<size_t>(n_tok * n_out), NAN), y(want.size(), NAN);
    ASSERT_TRUE(matmul_q8k_amx(t, k.w.data(), n_out, n_in, k.a, want.data()));
    ASSERT_TRUE(matmul_q8k_amx(repacked_type(t), k.r.data(), n_out, n_in, k.a, y.data()));
    EXPECT_TRUE(same_bits(want, y)) << dtype_name(t);
  }
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0}) {
    const int64_t n_out = 32, n_in = 128, n_tok = 20;
    const CaseOf<Q8Acts> k = make_case_of<Q8Acts>(t, n_out, n_in, n_tok, rng);
    std::vector<float> want(static_cast<size_t>(n_tok * n_out), NAN), y(want.size(), NAN);
    ASSERT_TRUE(matmul_q8_amx(t, k.w.data(), n_out, n_in, k.a, want.data()));
    ASSERT_TRUE(matmul_q8_amx(repacked_type(t), k.r.data(), n_out, n_in, k.a, y.data()));
    EXPECT_TRUE(same_bits(want, y)) << dtype_name(t);
  }
}

}  // namespace
}  // namespace fasa
