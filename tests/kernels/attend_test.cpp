// The attention kernel against its scalar reference, f16 and f32 rows, odd sizes, slot lists.
#include <gtest/gtest.h>

#include <cstring>

#include <cmath>
#include <random>
#include <vector>

#include "fasa/core/f16.h"
#include "fasa/kernels/attend.h"
#include "support/ref/kernels_ref.h"

namespace fasa {
namespace {

struct Rows {
  std::vector<uint8_t> k, v;
};

Rows make_rows(int n, int hd, KvType t, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const size_t eb = t == KvType::F16 ? 2 : 4;
  Rows r;
  r.k.resize(n * hd * eb);
  r.v.resize(n * hd * eb);
  for (int i = 0; i < n * hd; ++i) {
    const float a = nd(rng), b = nd(rng);
    if (t == KvType::F16) {
      reinterpret_cast<uint16_t*>(r.k.data())[i] = fp32_to_fp16(a);
      reinterpret_cast<uint16_t*>(r.v.data())[i] = fp32_to_fp16(b);
    } else {
      reinterpret_cast<float*>(r.k.data())[i] = a;
      reinterpret_cast<float*>(r.v.data())[i] = b;
    }
  }
  return r;
}

TEST(AttendTest, MatchesScalarReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (KvType t : {KvType::F16, KvType::F32}) {
    for (int hd : {8, 16, 64, 80}) {
      for (int n : {1, 2, 7, 33, 64, 65, 128, 129, 300, 1000}) {
        Rows r = make_rows(n, hd, t, rng);
        KvRows kv{r.k.data(), r.v.data(), t, hd};
        std::vector<float> q(hd);
        for (auto& x : q) x = nd(rng);
        std::vector<float> p1(n), p2(n), o1(hd), o2(hd);
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        attend_one(q.data(), kv, nullptr, n, scale, o1.data());
        attend_probs(q.data(), kv, nullptr, n, scale, p1.data());
        ref::attend_one(q.data(), kv, nullptr, n, scale, p2.data(), o2.data());
        for (int j = 0; j < n; ++j) EXPECT_NEAR(p1[j], p2[j], 1e-5f) << "n=" << n << " hd=" << hd;
        for (int i = 0; i < hd; ++i) EXPECT_NEAR(o1[i], o2[i], 1e-4f) << "n=" << n << " hd=" << hd;
      }
    }
  }
}

TEST(AttendTest, SlotListEqualsGatheredRows) {
  std::mt19937 rng(3);
  const int n = 50, hd = 64;
  Rows r = make_rows(n, hd, KvType::F16, rng);
  KvRows kv{r.k.data(), r.v.data(), KvType::F16, hd};
  std::vector<float> q(hd, 0.1f);
  const std::vector<int32_t> slots = {0, 3, 4, 17, 49};
  std::vector<float> p(slots.size()), out(hd), pr(slots.size()), outr(hd);
  attend_one(q.data(), kv, slots.data(), static_cast<int>(slots.size()), 0.125f, out.data());
  attend_probs(q.data(), kv, slots.data(), static_cast<int>(slots.size()), 0.125f, p.data());
  ref::attend_one(q.data(), kv, slots.data(), static_cast<int>(slots.size()), 0.125f, pr.data(),
                  outr.data());
  double psum = 0.0;
  for (size_t j = 0; j < slots.size(); ++j) psum += p[j];
  EXPECT_NEAR(psum, 1.0, 1e-5);
  for (int i = 0; i < hd; ++i) EXPECT_NEAR(out[i], outr[i], 1e-4f);
}

}  // namespace
}  // namespace fasa

namespace fasa {
namespace {

// Scores of 16 keys computed together (the blocked SIMD path) are bit-identical to each key's
// score computed alone, with and without a slot list, for both cache types.
TEST(AttendTest, BlockedScoresEqualSingleKeyScores) {
  std::mt19937 rng(9);
  for (KvType t : {KvType::F16, KvType::F32}) {
    const int n = 53, hd = 64;
    Rows r = make_rows(n, hd, t, rng);
    const KvRows rows{r.k.data(), r.v.data(), t, hd};
    std::vector<float> q(hd);
    std::normal_distribution<float> nd;
    for (auto& x : q) x = nd(rng);
    std::vector<int32_t> slots;
    for (int s = 0; s < n; s += 2) slots.push_back(s);
    for (const bool listed : {false, true}) {
      const int m = listed ? static_cast<int>(slots.size()) : n;
      std::vector<float> all(m), one(1);
      qk_scores(q.data(), rows, listed ? slots.data() : nullptr, m, all.data());
      for (int j = 0; j < m; ++j) {
        const int32_t s = listed ? slots[j] : j;
        qk_scores(q.data(), rows, &s, 1, one.data());
        EXPECT_EQ(std::memcmp(&all[j], &one[0], 4), 0) << j;
      }
    }
  }
}

}  // namespace
}  // namespace fasa

namespace fasa {
namespace {

// Prefill's shape of the kernel (many queries with causal limits walking shared tiles) gives
// every query exactly the bits of attend_one over its own keys (decode's shape).
TEST(AttendTest, ManyQueriesEqualOneAtATime) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  for (KvType t : {KvType::F16, KvType::F32}) {
    for (int hd : {16, 64, 24, 80, 128}) {
      const int n_max = 3 * kAttnChunk + 37;
      Rows r = make_rows(n_max, hd, t, rng);
      const KvRows rows{r.k.data(), r.v.data(), t, hd};
      const std::vector<int> n_keys =
          {1, 15, 16, 17, 63, 64, 65, kAttnChunk, kAttnChunk + 1, 2 * kAttnChunk - 1, n_max};
      const int n_q = static_cast<int>(n_keys.size());
      std::vector<float> q(n_q * hd);
      for (auto& v : q) v = nd(rng);
      std::vector<const float*> qs(n_q);
      for (int i = 0; i < n_q; ++i) qs[i] = q.data() + i * hd;
      const int ss = attn_state_size(hd);
      std::vector<float> total(n_q * ss), part(n_q * ss);
      for (int i = 0; i < n_q; ++i) attn_state_clear(total.data() + i * ss, hd);
      for (int c0 = 0; c0 < n_max; c0 += kAttnChunk) {
        attend_partial(qs.data(), n_q, n_keys.data(), rows, nullptr, c0,
                       std::min(n_max, c0 + kAttnChunk), 0.3f, part.data());
        for (int i = 0; i < n_q; ++i) {
          attn_state_merge(total.data() + i * ss, part.data() + i * ss, hd);
        }
      }
      for (int i = 0; i < n_q; ++i) {
        std::vector<float> many(hd), one(hd), probs(n_keys[i]), ref_out(hd);
        attn_state_finish(total.data() + i * ss, hd, many.data());
        attend_one(qs[i], rows, nullptr, n_keys[i], 0.3f, one.data());
        EXPECT_EQ(std::memcmp(many.data(), one.data(), hd * 4), 0) << "n=" << n_keys[i];
        ref::attend_one(qs[i], rows, nullptr, n_keys[i], 0.3f, probs.data(), ref_out.data());
        for (int d = 0; d < hd; ++d) EXPECT_NEAR(one[d], ref_out[d], 1e-4f) << "n=" << n_keys[i];
      }
    }
  }
}

// Large score ranges: the running max grows tile after tile and chunk after chunk, so every
// rescale path runs; the result still matches the two-pass double reference.
TEST(AttendTest, RescalesAsTheMaxGrows) {
  const int hd = 16, n = 2 * kAttnChunk + 50;
  std::vector<float> k(n * hd), v(n * hd), q(hd, 1.0f);
  for (int j = 0; j < n; ++j) {
    for (int d = 0; d < hd; ++d) {
      k[j * hd + d] = 0.02f * j * (d % 2 == 0 ? 1.0f : 0.5f);  // scores rise with j
      v[j * hd + d] = std::sin(0.1f * j + d);
    }
  }
  const KvRows rows{k.data(), v.data(), KvType::F32, hd};
  std::vector<float> out(hd), probs(n), ref_out(hd);
  attend_one(q.data(), rows, nullptr, n, 1.0f, out.data());
  ref::attend_one(q.data(), rows, nullptr, n, 1.0f, probs.data(), ref_out.data());
  for (int d = 0; d < hd; ++d) EXPECT_NEAR(out[d], ref_out[d], 1e-4f);
}

}  // namespace
}  // namespace fasa
