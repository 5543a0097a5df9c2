// `--kv-type q8_0`: K and V rows as Q8_0 blocks (llama.cpp's layout and rounding), the integer
// Q.K of decode and prefill attention (every instruction set the same bits as the scalar
// reference sequence), FASA's int8 packed slice (TIP), and FASA-M's file tier holding q8_0 rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/core/isa.h"
#include "fasa/kernels/attend.h"
#include "fasa/kernels/q8_0.h"
#include "fasa/kernels/tip.h"
#include "support/expect_error.h"
#include "support/isa_guard.h"
#include "support/ref/kernels_ref.h"

namespace fasa {
namespace {

std::vector<float> normal(size_t n, std::mt19937& rng, float sd = 1.0f) {
  std::normal_distribution<float> nd(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

// n rows of hd values quantized to Q8_0. [n, q8_0_row_bytes(hd)]
std::vector<uint8_t> q8_rows(const std::vector<float>& x, int n, int hd) {
  std::vector<uint8_t> out(n * q8_0_row_bytes(hd));
  for (int j = 0; j < n; ++j) {
    quantize_row_q8_0(x.data() + static_cast<size_t>(j) * hd, hd,
                      out.data() + j * q8_0_row_bytes(hd));
  }
  return out;
}

TEST(KvQ8, TypeNamesAndErrors) {
  EXPECT_EQ(parse_kv_type("q8_0"), KvType::Q8_0);
  EXPECT_STREQ(kv_type_name(KvType::Q8_0), "q8_0");
  EXPECT_EQ(kv_row_bytes(KvType::Q8_0, 64), 68u);
  EXPECT_EQ(kv_row_bytes(KvType::F16, 64), 128u);
  EXPECT_EQ(kv_row_bytes(KvType::F32, 64), 256u);
  test::expect_error([] { parse_kv_type("q4_0"); }, "'q4_0' (expected f16, f32 or q8_0)");
  // A head_dim that is no multiple of 32: one clear error naming it.
  test::expect_error(
      [] {
        KvCache(AttnShape{1, 2, 1, 48, {}}, KvType::Q8_0, 8);
      },
      "head_dim is 48");
  KvCache ok(AttnShape{1, 2, 1, 48, {}}, KvType::F16, 8);  // other types take any head_dim
}

// llama.cpp's Q8_0: per 32 values d = amax / 127 (stored fp16), q = roundf(x / d); each value
// comes back within half a step (plus the scale's fp16 rounding times |q| <= 127).
TEST(KvQ8, StoreIsLlamaCppQ8_0AndRoundTrips) {
  const int hd = 64, cap = 40;
  const AttnShape shape{2, 4, 2, hd, {}};
  KvCache cache(shape, KvType::Q8_0, cap);
  EXPECT_EQ(cache.row_bytes(), 68u);
  std::mt19937 rng(5);
  std::vector<std::vector<float>> keys;
  for (int s = 0; s < 30; ++s) {
    std::vector<float> k = normal(hd, rng, s % 3 == 0 ? 10.0f : 0.5f), v = normal(hd, rng);
    if (s == 7) std::fill(k.begin(), k.begin() + 32, 0.0f);  // an all-zero block: d = 0
    cache.store(1, 1, s, k.data(), v.data());
    keys.push_back(k);
  }
  std::vector<int32_t> pos(30);
  for (int i = 0; i < 30; ++i) pos[i] = i;
  cache.commit(30, pos.data());
  EXPECT_EQ(cache.used_bytes(), 2ull * 2 * 2 * 30 * 68);  // K+V, 2 layers, 2 kv heads
  EXPECT_EQ(cache.capacity_bytes(), 2ull * 2 * 2 * cap * 68);
  const auto* rows = static_cast<const uint8_t*>(cache.k_rows(1, 1));
  std::vector<float> back(hd);
  for (int s = 0; s < 30; ++s) {
    const uint8_t* row = rows + s * cache.row_bytes();
    kv_row_to_f32(row, KvType::Q8_0, hd, back.data());
    for (int b = 0; b < hd / 32; ++b) {
      float amax = 0.0f;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(keys[s][b * 32 + i]));
      const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      const uint16_t dh = fp32_to_fp16(d);
      EXPECT_EQ(row[b * 34] | (row[b * 34 + 1] << 8), dh) << s;  // fp16 d, little-endian, first
      const float df = fp16_to_fp32(dh);
      for (int i = 0; i < 32; ++i) {
        const float x = keys[s][b * 32 + i];
        const auto q = static_cast<int8_t>(row[b * 34 + 2 + i]);
        ASSERT_EQ(q, static_cast<int8_t>(std::roundf(x * id))) << s << " " << b << " " << i;
        EXPECT_LE(std::fabs(back[b * 32 + i] - x), d / 2 + 127.0f * std::fabs(df - d) + 1e-7f);
        EXPECT_EQ(back[b * 32 + i], df * q);
        EXPECT_EQ(kv_value(row, KvType::Q8_0, b * 32 + i), df * q);
      }
    }
  }
}

// Integer Q.K: every instruction set gives ref::qk_scores_q8's bits (qk_scores, the scores of
// attend_probs), and decode/prefill attention is the same bits on every set; against double
// attention over the unquantized query and the dequantized rows it is close.
TEST(KvQ8, IntegerAttentionSameBitsOnEverySetAsTheReference) {
  std::mt19937 rng(9);
  for (int hd : {32, 64, 128}) {
    const int n = 2 * kAttnChunk + 77;
    const std::vector<float> kf = normal(static_cast<size_t>(n) * hd, rng, 2.0f),
                             vf = normal(static_cast<size_t>(n) * hd, rng);
    const std::vector<uint8_t> k = q8_rows(kf, n, hd), v = q8_rows(vf, n, hd);
    const KvRows rows{k.data(), v.data(), KvType::Q8_0, hd};
    const std::vector<float> q = normal(3 * hd, rng);
    std::vector<int32_t> slots;
    for (int s = 0; s < n; s += 3) slots.push_back(s);
    const int m = static_cast<int>(slots.size());
    std::vector<float> want(m), want_all(n);
    ref::qk_scores_q8(q.data(), rows, slots.data(), m, want.data());
    ref::qk_scores_q8(q.data() + hd, rows, nullptr, n, want_all.data());
    IsaGuard guard;
    std::vector<std::vector<float>> outs;
    for (const Isa isa : available_isas()) {
      set_active_isa(isa);
      std::vector<float> got(m), got_all(n);
      qk_scores(q.data(), rows, slots.data(), m, got.data());
      qk_scores(q.data() + hd, rows, nullptr, n, got_all.data());
      EXPECT_TRUE(same_bits(got, want)) << isa_name(isa) << " hd " << hd;
      EXPECT_TRUE(same_bits(got_all, want_all)) << isa_name(isa) << " hd " << hd;
      std::vector<float> out(hd), all;
      for (int len : {1, 17, 64, 200, n}) {
        attend_one(q.data(), rows, nullptr, len, 0.125f, out.data());
        all.insert(all.end(), out.begin(), out.end());
      }
      attend_one(q.data(), rows, slots.data(), m, 0.125f, out.data());
      all.insert(all.end(), out.begin(), out.end());
      std::vector<float> probs(m);
      attend_probs(q.data() + hd, rows, slots.data(), m, 0.125f, probs.data());
      all.insert(all.end(), probs.begin(), probs.end());
      const float* qs[3] = {q.data(), q.data() + hd, q.data() + 2 * hd};
      const int n_keys[3] = {5, 70, kAttnChunk};
      std::vector<float> st(3 * attn_state_size(hd));
      attend_partial(qs, 3, n_keys, rows, nullptr, 0, kAttnChunk, 0.3f, st.data());
      all.insert(all.end(), st.begin(), st.end());
      // A decode query equals the same query inside a prefill block (its own causal limit).
      std::vector<float> one(attn_state_size(hd));
      attend_partial(qs + 1, 1, n_keys + 1, rows, nullptr, 0, kAttnChunk, 0.3f, one.data());
      EXPECT_TRUE(std::equal(one.begin(), one.end(), st.begin() + attn_state_size(hd)));
      outs.push_back(all);
      // Close to exact attention over the stored values (the query's own rounding only; the
      // largest difference measured here is 0.0076, at head_dim 64, for outputs of size ~1).
      std::vector<float> p(m), exact(hd);
      ref::attend_one(q.data(), rows, slots.data(), m, 0.125f, p.data(), exact.data());
      attend_one(q.data(), rows, slots.data(), m, 0.125f, out.data());
      float worst = 0.0f;
      for (int d = 0; d < hd; ++d) worst = std::max(worst, std::fabs(out[d] - exact[d]));
      std::printf("[kvq8] hd %d %s: max |out - exact| %.5f\n", hd, isa_name(isa), worst);
      EXPECT_LT(worst, 1e-2f) << hd;
    }
    for (size_t i = 1; i < outs.size(); ++i) {
      EXPECT_TRUE(same_bits(outs[0], outs[i])) << "hd " << hd << ": set " << i << " differs";
    }
  }
}

// TIP over an int8 slice with a per-slot scale: every set gives the reference's bits.
TEST(KvQ8, TipScoresQ8SameBitsOnEverySet) {
  std::mt19937 rng(13);
  const int n = 301, cols = 5;
  std::vector<int8_t> packed(cols * n);
  std::vector<uint16_t> scale(n);
  for (auto& x : packed) x = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  for (auto& d : scale) d = fp32_to_fp16(0.001f * static_cast<float>(1 + rng() % 1000));
  const std::vector<TipTerm> terms = {{3, 0.7f}, {0, -1.25f}, {4, 2.0f}, {1, 0.01f}};
  std::vector<float> want(n - 3);
  ref::tip_scores_q8(packed.data() + 3, scale.data() + 3, n, terms.data(), 4, n - 3, want.data());
  IsaGuard guard;
  for (const Isa isa : available_isas()) {
    set_active_isa(isa);
    std::vector<float> got(n - 3);
    tip_scores_q8(packed.data() + 3, scale.data() + 3, n, terms.data(), 4, n - 3, got.data());
    EXPECT_TRUE(same_bits(got, want)) << isa_name(isa);
  }
}

// FASA-M over q8_0: the file tier gives back the stored Q8_0 rows bit for bit, and RAM holds
// the int8 hot slice with its per-slot scale (pack_hot_q8 of the stored K row).
TEST(KvQ8, TieredGatherEqualsThePlainCache) {
  const int hd = 64, cap = 100;
  const AttnShape shape{3, 4, 2, hd, {}};
  KvTiering t;
  t.dir = ::testing::TempDir();
  t.offload_layer = {0, 1, 1};
  t.hot_dims = {{}, {}, {0, 1, 40, 41}, {2, 3, 60, 61}, {}, {4, 5, 6, 7, 33, 34}};
  KvCache plain(shape, KvType::Q8_0, cap), tiered(shape, KvType::Q8_0, cap, &t);
  std::mt19937 rng(11);
  int n = 0;
  std::set<int32_t> seen;
  for (int chunk : {40, 1, 1, 33, 1}) {
    std::vector<int32_t> pos(chunk);
    for (int i = 0; i < chunk; ++i) pos[i] = n + i;
    for (int s = n; s < n + chunk; ++s) {
      for (int l = 0; l < 3; ++l) {
        for (int g = 0; g < 2; ++g) {
          const std::vector<float> k = normal(hd, rng), v = normal(hd, rng);
          plain.store(l, g, s, k.data(), v.data());
          tiered.store(l, g, s, k.data(), v.data());
        }
      }
    }
    plain.commit(chunk, pos.data());
    tiered.commit(chunk, pos.data());
    n += chunk;
    for (int l = 0; l < 3; ++l) {
      for (int g = 0; g < 2; ++g) {
        std::vector<int32_t> slots;
        for (int s = 0; s < n; s += 1 + static_cast<int>(rng() % 7)) slots.push_back(s);
        const size_t row = plain.row_bytes(), m = slots.size();
        std::vector<uint8_t> k1(m * row), v1(m * row), k2(m * row), v2(m * row);
        plain.gather(l, g, slots.data(), static_cast<int>(m), k1.data(), v1.data());
        tiered.gather(l, g, slots.data(), static_cast<int>(m), k2.data(), v2.data());
        EXPECT_EQ(k1, k2) << l << " " << g;
        EXPECT_EQ(v1, v2) << l << " " << g;
        const auto& dims = tiered.hot_dims(l, g);
        if (l == 0 || dims.empty()) continue;
        const auto* hot = static_cast<const int8_t*>(tiered.hot_rows(l, g));
        const uint16_t* scale = tiered.hot_scales(l, g);
        const auto* kr = static_cast<const uint8_t*>(plain.k_rows(l, g));
        for (int32_t s : slots) {
          std::vector<int8_t> q(dims.size());
          uint16_t d = 0;
          pack_hot_q8(kr + s * row, dims.data(), static_cast<int>(dims.size()), q.data(), 1, &d);
          EXPECT_EQ(scale[s], d);
          for (size_t i = 0; i < dims.size(); ++i) ASSERT_EQ(hot[i * cap + s], q[i]);
        }
      }
    }
  }
  tiered.check_io();
  EXPECT_GT(tiered.file_bytes(), 0u);
  EXPECT_LT(tiered.ram_bytes(), plain.ram_bytes() / 2);
}

}  // namespace
}  // namespace fasa
