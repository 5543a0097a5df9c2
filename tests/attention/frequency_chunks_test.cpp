// Frequency-chunk mappings and Contextual Agreement against plain references on known data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "fasa/attention/frequency_chunks.h"
#include "fasa/core/error.h"
#include "fasa/kernels/ops.h"

namespace fasa {
namespace {

bool is_partition(const std::vector<FcDims>& fcs, int d) {
  std::set<int> seen;
  for (const auto& f : fcs) {
    seen.insert(f.a);
    seen.insert(f.b);
  }
  return static_cast<int>(seen.size()) == d && *seen.begin() == 0 && *seen.rbegin() == d - 1;
}

TEST(FrequencyChunks, MappingsFollowTheDocumentedFormulas) {
  const int d = 8;
  const auto norm = fc_dims(RopeLayout::Norm, FcLayout::Rope, d, d);
  const auto neox = fc_dims(RopeLayout::Neox, FcLayout::Rope, d, d);
  const auto adj_neox = fc_dims(RopeLayout::Neox, FcLayout::Adjacent, d, d);
  const auto adj_norm = fc_dims(RopeLayout::Norm, FcLayout::Adjacent, d, d);
  const std::vector<std::pair<int, int>> want_norm = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  const std::vector<std::pair<int, int>> want_neox = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  const std::vector<std::pair<int, int>> want_adj_norm = {{0, 2}, {4, 6}, {1, 3}, {5, 7}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(std::make_pair(norm[i].a, norm[i].b), want_norm[i]);
    EXPECT_EQ(std::make_pair(neox[i].a, neox[i].b), want_neox[i]);
    EXPECT_EQ(std::make_pair(adj_neox[i].a, adj_neox[i].b), want_norm[i]);
    EXPECT_EQ(std::make_pair(adj_norm[i].a, adj_norm[i].b), want_adj_norm[i]);
  }
  for (int hd : {8, 64, 256}) {
    for (auto r : {RopeLayout::Norm, RopeLayout::Neox}) {
      for (auto l : {FcLayout::Rope, FcLayout::Adjacent}) {
        EXPECT_TRUE(is_partition(fc_dims(r, l, hd, hd), hd));
      }
    }
  }
}

// The defining property of a true RoPE plane: rotation never mixes it with another plane, so
// the plane's norm is the same at every position. The authors' adjacent grouping of a NORM
// model's dims breaks that.
TEST(FrequencyChunks, RopePlanesAreInvariantUnderRotation) {
  const int d = 16;
  std::vector<float> freqs(d / 2);
  rope_freqs(10000.0f, d, freqs.data());
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(d);
  for (auto& x : v) x = nd(rng);
  auto norms = [&](const std::vector<FcDims>& fcs, const std::vector<float>& x) {
    std::vector<double> n;
    for (const auto& f : fcs) n.push_back(std::hypot(x[f.a], x[f.b]));
    return n;
  };
  for (auto r : {RopeLayout::Norm, RopeLayout::Neox}) {
    const auto fcs = fc_dims(r, FcLayout::Rope, d, d);
    std::vector<float> rot = v;
    rope_apply(rot.data(), d, d, r, 37, freqs.data());
    const auto before = norms(fcs, v), after = norms(fcs, rot);
    for (size_t i = 0; i < before.size(); ++i) EXPECT_NEAR(before[i], after[i], 1e-5);
  }
  const auto adj = fc_dims(RopeLayout::Norm, FcLayout::Adjacent, d, d);
  std::vector<float> rot = v;
  rope_apply(rot.data(), d, d, RopeLayout::Norm, 37, freqs.data());
  const auto before = norms(adj, v), after = norms(adj, rot);
  double worst = 0.0;
  for (size_t i = 0; i < before.size(); ++i)
    worst = std::max(worst, std::fabs(before[i] - after[i]));
  EXPECT_GT(worst, 1e-2);
}

// Plain reference: double logits, full sort with index tie-break, set intersection.
std::vector<int> ref_topk(const std::vector<double>& s, int k) {
  std::vector<int> idx(s.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return s[a] > s[b]; });
  idx.resize(k);
  return idx;
}

double ref_overlap(const std::vector<int>& a, const std::vector<int>& b) {
  std::set<int> sa(a.begin(), a.end());
  int n = 0;
  for (int x : b) n += sa.count(x);
  return static_cast<double>(n) / a.size();
}

TEST(FrequencyChunks, AgreementMatchesPlainReference) {
  // Small integers: every logit is exact in float and double, so rankings agree exactly.
  const int d = 16, n = 57, k = 9;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> u(-4, 4);
  std::vector<float> q(d), keys(n * d);
  for (auto& x : q) x = static_cast<float>(u(rng));
  for (auto& x : keys) x = static_cast<float>(u(rng));
  for (auto r : {RopeLayout::Norm, RopeLayout::Neox}) {
    const auto fcs = fc_dims(r, FcLayout::Rope, d, d);
    std::vector<float> ca(fcs.size());
    fc_agreement(q.data(), keys.data(), n, d, fcs, k, ca.data());
    std::vector<double> full(n);
    for (int t = 0; t < n; ++t) {
      for (int i = 0; i < d; ++i) full[t] += static_cast<double>(q[i]) * keys[t * d + i];
    }
    const auto top_full = ref_topk(full, k);
    for (size_t f = 0; f < fcs.size(); ++f) {
      std::vector<double> alpha(n);
      for (int t = 0; t < n; ++t) {
        alpha[t] = static_cast<double>(q[fcs[f].a]) * keys[t * d + fcs[f].a] +
                   static_cast<double>(q[fcs[f].b]) * keys[t * d + fcs[f].b];
      }
      EXPECT_FLOAT_EQ(ca[f], ref_overlap(top_full, ref_topk(alpha, k))) << "fc " << f;
    }
    std::vector<int> all(fcs.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    EXPECT_FLOAT_EQ(compound_agreement(q.data(), keys.data(), n, d, fcs, all, k), 1.0f);
  }
}

TEST(FrequencyChunks, KnownDominantChunk) {
  // Keys live only in FC 3's plane: FC 3 ranks tokens exactly like the whole head.
  const int d = 16, n = 40, k = 8;
  const auto fcs = fc_dims(RopeLayout::Norm, FcLayout::Rope, d, d);
  std::vector<float> q(d, 1.0f), keys(n * d, 0.0f);
  for (int t = 0; t < n; ++t) {
    keys[t * d + fcs[3].a] = static_cast<float>((t * 7) % 13);
    keys[t * d + fcs[3].b] = static_cast<float>((t * 5) % 11) * 0.5f;
  }
  std::vector<float> ca(fcs.size());
  fc_agreement(q.data(), keys.data(), n, d, fcs, k, ca.data());
  EXPECT_FLOAT_EQ(ca[3], 1.0f);
  EXPECT_FLOAT_EQ(compound_agreement(q.data(), keys.data(), n, d, fcs, {3}, k), 1.0f);
  EXPECT_LT(compound_agreement(q.data(), keys.data(), n, d, fcs, {0, 1}, k), 1.0f);
}

TEST(FrequencyChunks, WindowCoveringAllTokensAgreesFully) {
  const int d = 16, n = 12;
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> q(d), keys(n * d);
  for (auto& x : q) x = nd(rng);
  for (auto& x : keys) x = nd(rng);
  const auto fcs = fc_dims(RopeLayout::Neox, FcLayout::Rope, d, d);
  std::vector<float> ca(fcs.size());
  fc_agreement(q.data(), keys.data(), n, d, fcs, n + 5, ca.data());
  for (float x : ca) EXPECT_FLOAT_EQ(x, 1.0f);
  fc_agreement(q.data(), keys.data(), n, d, fcs, 3, ca.data());
  EXPECT_LT(*std::min_element(ca.begin(), ca.end()), 1.0f);
}

TEST(FrequencyChunks, BadInput) {
  EXPECT_THROW(parse_fc_layout("diagonal"), Error);
  EXPECT_EQ(parse_fc_layout("adjacent"), FcLayout::Adjacent);
  EXPECT_THROW(fc_dims(RopeLayout::Norm, FcLayout::Rope, 64, 32), Error);
  EXPECT_THROW(fc_dims(RopeLayout::Norm, FcLayout::Rope, 7, 7), Error);
}

}  // namespace
}  // namespace fasa
