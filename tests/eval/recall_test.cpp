// `eval recall` on a tiny model: the measures' fixed points and bounds.
#include <gtest/gtest.h>

#include <random>

#include "fasa/calibrate/calibrator.h"
#include "fasa/core/error.h"
#include "fasa/eval/recall.h"
#include "fasa/model/model.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

struct TinyText {
  std::shared_ptr<const Model> model;
  std::vector<int32_t> tokens;
  TinyText() {
    const std::string path = ::testing::TempDir() + "/recall_tiny_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                             ".gguf";
    test::TinySpec spec;
    spec.wtype = DType::Q8_0;
    test::write_tiny_model(path, spec);
    model = Model::load(path);
    std::mt19937 rng(21);
    tokens.resize(120);
    for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  }
};

RecallResult run(const TinyText& t, const std::string& policy) {
  RecallOptions o;
  o.n_ctx = 48;
  o.steps = 6;
  o.policy = policy;
  return evaluate_recall(t.model, t.tokens, o, nullptr);
}

TEST(RecallTest, FullAttentionIsPerfect) {
  TinyText t;
  const RecallResult r = run(t, "full");
  EXPECT_DOUBLE_EQ(r.mean_recall, 1.0);
  EXPECT_DOUBLE_EQ(r.mean_mass, 1.0);
  for (double kl : r.kl) EXPECT_EQ(kl, 0.0);  // same computation, bit for bit
  EXPECT_DOUBLE_EQ(r.dense_fraction, 1.0);
}

TEST(RecallTest, PerHeadOracleHasRecallOne) {
  TinyText t;
  const RecallResult r = run(t, "oracle:budget=8,gqa=per-head");
  EXPECT_DOUBLE_EQ(r.mean_recall, 1.0);
  EXPECT_GT(r.mean_mass, 0.0);
  EXPECT_LT(r.mean_mass, 1.0);
  for (double kl : r.kl) EXPECT_GE(kl, -1e-9);
  EXPECT_GT(r.mean_kl, 0.0);
  EXPECT_EQ(r.budget_last, 8);
}

TEST(RecallTest, SharedSelectionIsBoundedByThePerHeadOracle) {
  TinyText t;
  const RecallResult shared = run(t, "oracle:budget=8");
  const RecallResult small = run(t, "oracle:budget=2,gqa=per-head");
  const RecallResult large = run(t, "oracle:budget=32,gqa=per-head");
  EXPECT_LE(shared.mean_recall, 1.0);
  EXPECT_GT(shared.mean_recall, 0.0);
  EXPECT_LT(small.mean_mass, large.mean_mass);  // more slots hold more attention mass
  EXPECT_GT(small.mean_kl, large.mean_kl);
}

// Comparing policies in one run gives exactly what separate runs give.
TEST(RecallTest, ComparedPoliciesEqualSeparateRuns) {
  TinyText t;
  RecallOptions o;
  o.n_ctx = 48;
  o.steps = 6;
  o.policy = "oracle:budget=8";
  // The prefill-aware ones take their statistics from the watched reference prefill (snapkv
  // with window 6 prefills itself).
  o.compare = {"oracle:budget=3,gqa=per-head", "full", "snapkv:budget=8,window=4", "h2o:budget=8",
               "snapkv:budget=10,window=6"};
  const std::vector<RecallResult> all = evaluate_recall_all(t.model, t.tokens, o, nullptr);
  ASSERT_EQ(all.size(), 6u);
  for (size_t p = 0; p < all.size(); ++p) {
    const RecallResult r = run(t, p == 0 ? o.policy : o.compare[p - 1]);
    EXPECT_EQ(all[p].recall, r.recall) << p;
    EXPECT_EQ(all[p].mass, r.mass) << p;
    EXPECT_EQ(all[p].kl, r.kl) << p;
  }
}

// A hybrid stack (sliding, global, sliding, global): only the global layers are evaluated.
TEST(RecallTest, HybridModelEvaluatesItsGlobalLayersOnly) {
  const std::string path = ::testing::TempDir() + "/recall_tiny_hybrid.gguf";
  test::TinySpec spec;
  spec.arch = "gemma3";
  spec.n_layers = 4;
  spec.sliding_window = 5;
  spec.window_pattern = 2;
  spec.rope_base_local = 100.0f;
  spec.wtype = DType::Q8_0;
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  std::mt19937 rng(23);
  std::vector<int32_t> tokens(120), calib_text(80);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  for (auto& t : calib_text) t = static_cast<int32_t>(rng() % spec.n_vocab);
  CalibrateOptions co;
  co.k = 8;
  co.samples = 2;
  co.tokens = 30;
  co.steps = 3;
  const std::string calib = ::testing::TempDir() + "/recall_tiny_hybrid_calib.json";
  save_calibration(calibrate(model, calib_text, co, nullptr), calib);
  RecallOptions o;
  o.n_ctx = 48;
  o.steps = 6;
  o.policy = "oracle:budget=8,gqa=per-head";
  o.compare = {"full", "fasa:calib=" + calib + ",budget=8"};
  const std::vector<RecallResult> all = evaluate_recall_all(model, tokens, o, nullptr);
  ASSERT_EQ(all.size(), 3u);
  for (const RecallResult& r : all) {
    EXPECT_EQ(r.n_layers, 4);
    EXPECT_EQ(r.layers, (std::vector<int>{1, 3})) << r.policy;
    EXPECT_EQ(r.recall.size(), 2u * 4) << r.policy;
    EXPECT_EQ(r.mass.size(), 2u * 4) << r.policy;
  }
  EXPECT_DOUBLE_EQ(all[0].mean_recall, 1.0);
  EXPECT_DOUBLE_EQ(all[0].dense_fraction, 0.0);
  for (double kl : all[1].kl) EXPECT_EQ(kl, 0.0);
  EXPECT_DOUBLE_EQ(all[1].dense_fraction, 1.0);
  // FASA: every global layer sparse (the default dense layer 0 slides here).
  EXPECT_DOUBLE_EQ(all[2].dense_fraction, 0.0);
  EXPECT_GT(all[2].mean_recall, 0.0);
  EXPECT_LE(all[2].mean_recall, 1.0);
  for (double x : all[2].recall) EXPECT_GT(x, 0.0);  // every evaluated head was measured
}

TEST(RecallTest, BadOptions) {
  TinyText t;
  RecallOptions o;
  o.n_ctx = 200;
  o.steps = 5;
  o.policy = "full";
  EXPECT_THROW(evaluate_recall(t.model, t.tokens, o, nullptr), Error);  // text too short
  o.n_ctx = 10;
  o.policy = "oracle";
  EXPECT_THROW(evaluate_recall(t.model, t.tokens, o, nullptr), Error);  // no budget
  o.policy = "full";
  o.steps = 0;
  EXPECT_THROW(evaluate_recall(t.model, t.tokens, o, nullptr), Error);
}

}  // namespace
}  // namespace fasa
