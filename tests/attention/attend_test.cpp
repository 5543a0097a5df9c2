// The attention kernel against its scalar reference, f16 and f32 rows, odd sizes, slot lists.
#include <gtest/gtest.h>

#include <cstring>

#include <cmath>
#include <random>
#include <vector>

#include "fasa/attention/attend.h"
#include "fasa/core/f16.h"

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
      for (int n : {1, 2, 7, 33, 300}) {
        Rows r = make_rows(n, hd, t, rng);
        KvRows kv{r.k.data(), r.v.data(), t, hd};
        std::vector<float> q(hd);
        for (auto& x : q) x = nd(rng);
        std::vector<float> p1(n), p2(n), o1(hd), o2(hd);
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        attend_one(q.data(), kv, nullptr, n, scale, p1.data(), o1.data());
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
  attend_one(q.data(), kv, slots.data(), static_cast<int>(slots.size()), 0.125f, p.data(),
             out.data());
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
