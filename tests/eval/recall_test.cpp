// `eval recall`: its measures (recall vs the oracle top-B, attention mass, KL) against brute
// force computed here in double, on random cases and end to end on a tiny model; and their fixed
// points and bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "fasa/attention/policy.h"
#include "fasa/calibrate/calibrator.h"
#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/engine/session.h"
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

// ---- brute force, in double ----------------------------------------------------------------

// The k best slots by logit (ties: the lower slot), ascending.
std::vector<int32_t> brute_top(const std::vector<double>& logits, int k) {
  std::vector<int32_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

double brute_recall(const std::vector<double>& logits, int k, const std::vector<int32_t>& sel) {
  const std::vector<int32_t> top = brute_top(logits, k);
  int hit = 0;
  for (int32_t t : sel) hit += std::count(top.begin(), top.end(), t) > 0;
  return static_cast<double>(hit) / k;
}

// softmax(scale * logits) over every slot, summed over sel.
double brute_mass(const std::vector<double>& logits, double scale,
                  const std::vector<int32_t>& sel) {
  const double mx = *std::max_element(logits.begin(), logits.end());
  double z = 0.0, in = 0.0;
  for (double l : logits) z += std::exp(scale * (l - mx));
  for (int32_t t : sel) in += std::exp(scale * (logits[t] - mx));
  return in / z;
}

double brute_kl(const std::vector<float>& p, const std::vector<float>& q) {
  auto log_softmax = [](const std::vector<float>& l) {
    const double mx = *std::max_element(l.begin(), l.end());
    double z = 0.0;
    for (float x : l) z += std::exp(x - mx);
    std::vector<double> out(l.size());
    for (size_t i = 0; i < l.size(); ++i) out[i] = l[i] - mx - std::log(z);
    return out;
  };
  const std::vector<double> lp = log_softmax(p), lq = log_softmax(q);
  double kl = 0.0;
  for (size_t i = 0; i < p.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kl;
}

// Random cases: recall and mass strictly inside (0, 1) in most of them; integer logits give
// ties (the lower slot wins, in both).
TEST(RecallMeasures, HeadMeasureMatchesBruteForce) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  int inside = 0;
  for (int c = 0; c < 300; ++c) {
    const int n = 4 + static_cast<int>(rng() % 60);
    const int k = 1 + static_cast<int>(rng() % (n - 1));
    const bool ties = c % 3 == 0;
    std::vector<float> logits(n);
    for (float& x : logits)
      x = ties ? static_cast<float>(static_cast<int>(rng() % 5)) : normal(rng);
    std::vector<int32_t> all(n), sel;
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    sel.assign(all.begin(), all.begin() + 1 + rng() % (n - 1));
    std::sort(sel.begin(), sel.end());
    const float scale = 0.25f + 0.5f * (c % 4);
    const HeadMeasure m = measure_head(logits.data(), n, k, scale, &sel);
    const std::vector<double> ld(logits.begin(), logits.end());
    const double want_recall = brute_recall(ld, k, sel), want_mass = brute_mass(ld, scale, sel);
    EXPECT_DOUBLE_EQ(m.recall, want_recall) << "case " << c;
    EXPECT_NEAR(m.mass, want_mass, 1e-6) << "case " << c;
    inside += want_recall > 0.0 && want_recall < 1.0 && want_mass > 0.0 && want_mass < 1.0;
  }
  EXPECT_GT(inside, 150);
  // Every slot read (dense): recall 1, mass 1.
  const std::vector<float> l{1.0f, 3.0f, 2.0f};
  const HeadMeasure dense = measure_head(l.data(), 3, 2, 1.0f, nullptr);
  EXPECT_EQ(dense.recall, 1.0);
  EXPECT_EQ(dense.mass, 1.0);
}

TEST(RecallMeasures, KlOfLogitsMatchesBruteForce) {
  std::mt19937 rng(6);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int c = 0; c < 50; ++c) {
    const int n = 2 + static_cast<int>(rng() % 400);
    std::vector<float> p(n), q(n);
    for (float& x : p) x = normal(rng);
    for (size_t i = 0; i < q.size(); ++i) q[i] = c % 2 ? p[i] + 0.3f * normal(rng) : normal(rng);
    const double want = brute_kl(p, q);
    EXPECT_GT(want, 0.0);
    EXPECT_NEAR(kl_of_logits(p.data(), q.data(), n), want, 1e-9 * std::max(1.0, want)) << c;
    EXPECT_EQ(kl_of_logits(p.data(), p.data(), n), 0.0);
  }
}

// Passes an inner policy's selections through and records, per decode step, layer and kv head,
// the group's queries, the visible keys (as the f16 cache holds them) and the slots read.
class Recorder final : public AttentionPolicy {
 public:
  struct Step {
    int layer, kv_head, n;
    std::vector<float> q;     // [n_group, head_dim]
    std::vector<float> keys;  // [n, head_dim]
    bool all;
    std::vector<std::vector<int32_t>> sel;  // [n_group] slots per query head
  };
  explicit Recorder(std::unique_ptr<AttentionPolicy> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  void on_append(const KvCache& c, int layer, int first, int n) override {
    inner_->on_append(c, layer, first, n);
  }
  void select_layer(const AttnQuery* qs, int n, Selection* outs) override {  // in order
    for (int g = 0; g < n; ++g) select(qs[g], outs[g]);
  }
  void select(const AttnQuery& q, Selection& out) override {
    inner_->select(q, out);
    const int hd = q.cache->shape().head_dim;
    Step s{q.layer, q.kv_head, q.n_visible, std::vector<float>(q.q, q.q + q.n_group * hd),
           {},      out.all,   {}};
    const auto* k = static_cast<const uint16_t*>(q.cache->k_rows(q.layer, q.kv_head));
    for (int i = 0; i < q.n_visible * hd; ++i) s.keys.push_back(fp16_to_fp32(k[i]));
    for (int j = 0; j < q.n_group; ++j)
      s.sel.push_back(out.all ? std::vector<int32_t>{} : out.slots_for(j));
    steps.push_back(std::move(s));
  }
  std::vector<Step> steps;

 private:
  std::unique_ptr<AttentionPolicy> inner_;
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

// End to end: what `eval recall` reports equals recall, mass and KL recomputed here from the
// queries, keys and selections a recording copy of the policy observes, and the logits of a
// dense and a sparse session. The second spec's budget covers the context for the first steps:
// those steps read every slot and are left out of the means.
TEST(RecallTest, EndToEndEqualsBruteForceFromObservedAttention) {
  TinyText t;
  const ModelConfig& mc = t.model->config();
  const int n_ctx = 48, steps = 6, hd = mc.head_dim, ng = mc.n_heads / mc.n_kv_heads;
  RecallOptions o;
  o.n_ctx = n_ctx;
  o.steps = steps;
  o.policy = "streaming:budget=8,sinks=2";
  o.compare = {"streaming:budget=51,sinks=4"};
  const std::vector<RecallResult> got = evaluate_recall_all(t.model, t.tokens, o, nullptr);
  ASSERT_EQ(got.size(), 2u);
  const std::vector<int32_t> prefix(t.tokens.begin(), t.tokens.begin() + n_ctx);
  SessionOptions so;
  so.n_ctx = n_ctx + steps;
  Session full(t.model, so);
  full.prefill(prefix);
  std::vector<std::vector<float>> full_logits;
  for (int i = 0; i < steps; ++i) full_logits.push_back(full.decode(t.tokens[n_ctx + i]));
  const std::vector<std::string> specs{o.policy, o.compare[0]};
  const std::vector<int> budgets{8, 51};
  for (size_t p = 0; p < specs.size(); ++p) {
    std::string name;
    PolicyOptions popts;
    parse_policy_spec(specs[p], &name, &popts);
    Recorder rec(make_policy(name, policy_context(t.model), popts));
    so.external_policy = &rec;
    Session sparse(t.model, so);
    sparse.prefill(prefix);
    const RecallResult& r = got[p];
    ASSERT_EQ(r.kl.size(), static_cast<size_t>(steps));
    for (int i = 0; i < steps; ++i) {
      const std::vector<float>& ls = sparse.decode(t.tokens[n_ctx + i]);
      EXPECT_NEAR(r.kl[i], brute_kl(full_logits[i], ls), 1e-7) << specs[p] << " step " << i;
    }
    // Per (layer, head): the means over the steps; overall: over the sparse steps.
    const size_t rows = static_cast<size_t>(mc.n_layers) * mc.n_heads;
    std::vector<double> recall(rows, 0.0), mass(rows, 0.0);
    double sparse_recall = 0.0, sparse_mass = 0.0, dense = 0.0;
    int n_sparse = 0, inside = 0;
    ASSERT_EQ(rec.steps.size(), static_cast<size_t>(steps) * mc.n_layers * mc.n_kv_heads);
    for (const Recorder::Step& s : rec.steps) {
      const int k = std::min(budgets[p], s.n);
      for (int j = 0; j < ng; ++j) {
        std::vector<double> logits(s.n, 0.0);
        for (int u = 0; u < s.n; ++u) {
          for (int c = 0; c < hd; ++c) logits[u] += double(s.q[j * hd + c]) * s.keys[u * hd + c];
        }
        const size_t row = static_cast<size_t>(s.layer) * mc.n_heads + s.kv_head * ng + j;
        if (s.all) {
          recall[row] += 1.0;
          mass[row] += 1.0;
          dense += 1;
          continue;
        }
        const double rc = brute_recall(logits, k, s.sel[j]);
        const double ms = brute_mass(logits, 1.0 / std::sqrt(double(hd)), s.sel[j]);
        inside += rc > 0.0 && rc < 1.0 && ms > 0.0 && ms < 1.0;
        recall[row] += rc;
        mass[row] += ms;
        sparse_recall += rc;
        sparse_mass += ms;
        n_sparse += 1;
      }
    }
    ASSERT_EQ(r.recall.size(), rows);
    for (size_t row = 0; row < rows; ++row) {
      EXPECT_NEAR(r.recall[row], recall[row] / steps, 1e-12) << specs[p] << " row " << row;
      EXPECT_NEAR(r.mass[row], mass[row] / steps, 1e-6) << specs[p] << " row " << row;
    }
    ASSERT_GT(n_sparse, 0);
    if (p == 0) {
      EXPECT_GT(inside, n_sparse / 2);  // not 0/1 cases
    }
    EXPECT_NEAR(r.mean_recall, sparse_recall / n_sparse, 1e-12) << specs[p];
    EXPECT_NEAR(r.mean_mass, sparse_mass / n_sparse, 1e-6) << specs[p];
    EXPECT_DOUBLE_EQ(r.dense_fraction, dense / (steps * rows)) << specs[p];
    double kl = 0.0;
    for (double x : r.kl) kl += x;
    EXPECT_DOUBLE_EQ(r.mean_kl, kl / steps);
  }
  // Visible 49..54 slots with budget 51: three dense steps, three sparse.
  EXPECT_DOUBLE_EQ(got[1].dense_fraction, 0.5);
  EXPECT_DOUBLE_EQ(got[0].dense_fraction, 0.0);
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
