// `double-sparsity` (policies/double_sparsity.cpp): its selection against a brute force over the
// calibrated heavy channels, and its option and calibration errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "attention/policies/policy_fixture.h"
#include "fasa/attention/calibration.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/core/error.h"

namespace fasa {
namespace {

using test::calib_path;
using test::ds_calib_path;
using test::expect_policy_error;
using test::kShape;
using test::policy_from;
using test::RandomCache;
using test::test_context;

// Double Sparsity against a brute force: each head's heavy channels are its calibrated top
// importances; per head the slots are the top-B of q.K over those channels, shared the top-B of
// the heads' summed softmax shares (integer data: every score exact).
TEST(DoubleSparsityPolicy, SelectionMatchesBruteForceTopK) {
  const int n = 45, k = 7, hd = kShape.head_dim, ng = kShape.n_group(), R = 5;
  RandomCache f(n, 23, /*integer=*/true);
  const Calibration cal = load_calibration(ds_calib_path());
  const std::string d = "double-sparsity:calib=" + ds_calib_path() + ",dense_layers=none,budget=7";
  auto shared = policy_from(d + ",channels=5");
  auto per_head = policy_from(d + ",channels=5,gqa=per-head");
  f.show(*shared);
  f.show(*per_head);
  auto top = [&](const std::vector<double>& score) {
    std::vector<int32_t> idx(n);
    for (int t = 0; t < n; ++t) idx[t] = t;
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return score[a] > score[b]; });
    idx.resize(k);
    std::sort(idx.begin(), idx.end());
    return idx;
  };
  for (int l = 0; l < kShape.n_layers; ++l) {
    for (int g = 0; g < kShape.n_kv_heads; ++g) {
      const AttnQuery q = f.query(l, g);
      const auto* K = static_cast<const float*>(f.cache.k_rows(l, g));  // [capacity, head_dim]
      Selection ph, sh;
      per_head->select(q, ph);
      shared->select(q, sh);
      ASSERT_TRUE(ph.per_head);
      std::vector<double> mass(n, 0.0);
      std::set<int> packed;
      for (int j = 0; j < ng; ++j) {
        const int h = g * ng + j;
        std::vector<int> dims(hd);
        for (int c = 0; c < hd; ++c) dims[c] = c;
        const float* imp = cal.channels(l, h);
        std::stable_sort(dims.begin(), dims.end(), [&](int a, int b) { return imp[a] > imp[b]; });
        dims.resize(R);
        packed.insert(dims.begin(), dims.end());
        std::vector<double> score(n, 0.0);
        for (int t = 0; t < n; ++t) {
          for (int c : dims) score[t] += double(q.q[j * hd + c]) * K[t * hd + c];
        }
        EXPECT_EQ(ph.head_slots[j], top(score)) << "layer " << l << " head " << h;
        const double mx = *std::max_element(score.begin(), score.end());
        double z = 0.0;
        for (double x : score) z += std::exp((x - mx) / std::sqrt(hd));
        for (int t = 0; t < n; ++t) mass[t] += std::exp((score[t] - mx) / std::sqrt(hd)) / z;
      }
      EXPECT_EQ(sh.slots, top(mass)) << "layer " << l << " kv head " << g;
      // The label cache: the union of the group's channels, every slot once.
      EXPECT_EQ(sh.bytes_read, uint64_t{1} * n * packed.size() * 4);
    }
  }
}

TEST(DoubleSparsityPolicy, BadOptionsAreClearErrors) {
  const std::string d = "double-sparsity:calib=" + ds_calib_path();
  expect_policy_error("double-sparsity:budget=8,calib=/nonexistent.json", "nonexistent.json");
  // No calibration given and none stored: the channel statistic is measured online.
  EXPECT_NE(facet<OnlineCalibrationReport>(*policy_from("double-sparsity:budget=8")), nullptr);
  expect_policy_error(d, "needs a budget");
  expect_policy_error(d + ",budget=8,channels=0", "channels must be in [1, head_dim = 16]");
  expect_policy_error(d + ",budget=8,channels=17", "channels must be in [1, head_dim = 16]");
  expect_policy_error(d + ",budget=8,channels=x", "channels must be a non-negative whole number");
  expect_policy_error(d + ",budget=8,gqa=maybe", "gqa must be 'shared' or 'per-head'");
  expect_policy_error(d + ",budget=8,dense_layers=7", "dense layer 7 does not exist");
  expect_policy_error(d + ",budget=8,n_tip=4", "has no option 'n_tip'");
  expect_policy_error("double-sparsity:calib=/nonexistent.json,budget=8", "cannot read");
  // A calibration from before the channel statistics: fine for fasa, re-calibrate for this one.
  EXPECT_NO_THROW(policy_from(
      "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() + ",budget=8"));
  expect_policy_error("double-sparsity:calib=" + calib_path() + ",budget=8", "re-calibrate");
  EXPECT_THROW(policy_from(d + ",budget=8", test_context("another-model")), Error);
  EXPECT_NO_THROW(policy_from(d + ",budget=8,channels=16,gqa=per-head,dense_layers=0+1"));
}

}  // namespace
}  // namespace fasa
