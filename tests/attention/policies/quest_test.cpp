// `quest` (policies/quest.cpp): page boxes and selections against a brute force, its defaults,
// boxes built piece by piece, and its option errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "attention/policies/policy_fixture.h"
#include "fasa/attention/policy.h"

namespace fasa {
namespace {

using test::expect_policy_error;
using test::kShape;
using test::policy_from;
using test::RandomCache;
using test::test_context;

// Quest against a brute force: every page's box bounds every true q.k of its keys, and the pages
// read are the newest one plus the best by the max over the group's heads of those bounds, the
// last one cut to fill the budget exactly.
TEST(QuestPolicy, PageBoundsAndSelectionMatchBruteForce) {
  const int n = 45, hd = kShape.head_dim, page = 4, ng = kShape.n_group();
  RandomCache f(n, 13);
  for (int budget : {13, 11, 3, 1}) {
    auto p = policy_from("quest:dense_layers=none,page=4,budget=" + std::to_string(budget));
    f.show(*p);
    for (int l = 0; l < kShape.n_layers; ++l) {
      for (int g = 0; g < kShape.n_kv_heads; ++g) {
        const AttnQuery q = f.query(l, g);
        const auto* K = static_cast<const float*>(f.cache.k_rows(l, g));  // [capacity, head_dim]
        const int n_pages = (n + page - 1) / page;
        std::vector<double> score(n_pages, -INFINITY);
        for (int pg = 0; pg < n_pages; ++pg) {
          std::vector<float> lo(hd, INFINITY), hi(hd, -INFINITY);
          for (int s = pg * page; s < std::min(n, (pg + 1) * page); ++s) {
            for (int c = 0; c < hd; ++c) {
              lo[c] = std::min(lo[c], K[s * hd + c]);
              hi[c] = std::max(hi[c], K[s * hd + c]);
            }
          }
          for (int h = 0; h < ng; ++h) {
            const float* qh = q.q + h * hd;
            double ub = 0.0;
            for (int c = 0; c < hd; ++c)
              ub += std::max(double(qh[c]) * lo[c], double(qh[c]) * hi[c]);
            for (int s = pg * page; s < std::min(n, (pg + 1) * page); ++s) {
              double dot = 0.0;
              for (int c = 0; c < hd; ++c) dot += double(qh[c]) * K[s * hd + c];
              EXPECT_GE(ub, dot - 1e-9);
            }
            score[pg] = std::max(score[pg], ub);
          }
        }
        // Reference: newest page (slot 44 alone: 45 = 11 pages of 4 + 1), then pages by score.
        std::vector<int32_t> want = {44};
        std::vector<int> order(n_pages - 1);
        for (int i = 0; i < n_pages - 1; ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](int a, int b) { return score[a] > score[b]; });
        int left = budget - 1;
        for (int i = 0; left > 0; ++i) {
          for (int s = order[i] * page; s < order[i] * page + std::min(left, page); ++s) {
            want.push_back(s);
          }
          left -= std::min(left, page);
        }
        std::sort(want.begin(), want.end());
        Selection sel;
        p->select(q, sel);
        ASSERT_FALSE(sel.all);
        EXPECT_EQ(sel.slots, want) << "budget " << budget;
        EXPECT_EQ(static_cast<int>(sel.slots.size()), budget);
        EXPECT_EQ(sel.bytes_read, uint64_t{12} * 2 * hd * 4);  // 12 boxes of f32 keys
      }
    }
  }
}

// A budget below the newest page's fill reads its newest slots; the first two layers are dense
// by default; boxes built slot range by slot range (mid-page starts, partly filled pages) equal
// boxes built at once; resident bytes are the boxes'.
TEST(QuestPolicy, NewestPageDefaultsAndIncrementalBoxes) {
  const int n = 40;
  RandomCache f(n, 3);
  auto d = policy_from("quest:budget=5");  // page 16: the newest page holds slots 32..39
  f.show(*d);
  Selection s;
  d->select(f.query(0, 0), s);
  EXPECT_TRUE(s.all);  // layers 0 and 1 dense by default
  auto p = policy_from("quest:budget=5,dense_layers=0");
  auto q = policy_from("quest:budget=21,page=3,dense_layers=0");
  auto r = policy_from("quest:budget=21,page=3,dense_layers=0");
  for (int l = 0; l < kShape.n_layers; ++l) {
    p->on_append(f.cache, l, 0, n);
    q->on_append(f.cache, l, 0, n);
    for (auto [a, m] : {std::pair{0, 7}, {7, 1}, {8, 20}, {28, 12}}) r->on_append(f.cache, l, a, m);
  }
  p->select(f.query(1, 1), s);
  ASSERT_FALSE(s.all);
  EXPECT_EQ(s.slots, (std::vector<int32_t>{35, 36, 37, 38, 39}));
  EXPECT_EQ(p->resident_bytes(), 1u * 2 * 3 * 2 * 16 * 4);  // layer 1: 2 kv heads x 3 pages
  for (int g = 0; g < kShape.n_kv_heads; ++g) {
    Selection a, b;
    q->select(f.query(1, g), a);
    r->select(f.query(1, g), b);
    EXPECT_EQ(a.slots, b.slots);
    EXPECT_EQ(a.slots.size(), 21u);
  }
  EXPECT_EQ(q->resident_bytes(), r->resident_bytes());
  EXPECT_EQ(q->resident_bytes(), 1u * 2 * 14 * 2 * 16 * 4);  // 14 pages of 3
}

TEST(QuestPolicy, BadOptionsAreClearErrors) {
  expect_policy_error("quest", "needs a budget");
  expect_policy_error("quest:budget=8,page=0", "page must be at least 1");
  expect_policy_error("quest:budget=8,page=x", "page must be a non-negative whole number");
  expect_policy_error("quest:budget=8,page=-4", "page must be a non-negative whole number");
  expect_policy_error("quest:budget=0", "budget must be a positive number");
  expect_policy_error("quest:budget=8,dense_layers=7", "dense layer 7 does not exist");
  expect_policy_error("quest:budget=8,pages=4", "has no option 'pages'");
  PolicyContext hybrid = test_context();
  hybrid.shape.layer_window = {5, 0};
  expect_policy_error("quest:budget=8,dense_layers=0", "layer 0 is a sliding-window layer", hybrid);
  EXPECT_NO_THROW(policy_from("quest:budget=8", hybrid));  // default 0+1: layer 0 dropped
}

}  // namespace
}  // namespace fasa
