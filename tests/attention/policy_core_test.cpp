// What every registered policy must do, checked over all of them: selections sorted, unique, in
// range, within budget and deterministic, the whole layer equal to group by group, a budget
// covering the cache equal to full attention; scratch from the session's workspace; bytes read
// and kept; the driver's probabilities; and the option errors of the spec parser.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "attention/policies/policy_fixture.h"
#include "fasa/attention/attention.h"
#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/core/workspace.h"
#include "fasa/engine/session.h"
#include "fasa/kernels/attend.h"
#include "fasa/model/model.h"
#include "support/tiny_calibration.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

using test::calib_path;
using test::compound_calib_path;
using test::decode_through_driver;
using test::ds_calib_path;
using test::expect_layer_equals_groups;
using test::expect_policy_error;
using test::kShape;
using test::policy_from;
using test::RandomCache;

// Specs exercising every registered policy (a new policy must add itself here).
std::vector<std::string> specs() {
  const std::string c = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path();
  const std::string d = "double-sparsity:calib=" + ds_calib_path();
  const std::string c4 =
      "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + compound_calib_path();
  return {"full",
          "oracle:budget=8",
          "oracle:budget=0.25",
          "oracle:budget=5,gqa=per-head",
          c + ",budget=8,dense_layers=none",
          c + ",budget=0.25,gqa=per-head,sink=1,recent=2,dense_layers=none",
          c + ",budget=6,n_tip=2,sink=3",
          c + ",budget=5,fcs=random,dense_layers=none",
          c + ",budget=5,fcs=high,n_tip=3,dense_layers=none",
          c + ",budget=5,fcs=low,gqa=per-head,dense_layers=none",
          "fasa:calib=" + ds_calib_path() + ",budget=6,fcs=mass,n_tip=2,dense_layers=none",
          c4 + ",budget=6,fcs=compound,n_tip=3,dense_layers=none",
          c4 + ",budget=0.25,fc_sets=group,gqa=per-head,dense_layers=none",
          c4 + ",budget=5,mean_value=on,sink=1,dense_layers=none",
          c4 + ",budget=7,mean_value=on,gqa=per-head,fc_sets=group,fcs=compound,n_tip=2",
          c4 + ",budget=6,method=paper",
          "streaming:budget=8",
          "streaming:budget=0.25,sinks=2",
          "streaming:budget=5,sinks=0",
          "quest:budget=8,dense_layers=none",
          "quest:budget=0.25,page=4,dense_layers=none",
          "quest:budget=5,page=3",
          "quest:budget=20,dense_layers=1",
          "quest:budget=7,page=1,dense_layers=none",
          "sparq:budget=8",
          "sparq:budget=0.25,r=2",
          "sparq:budget=5,r=0.5,mean_correction=off",
          "sparq:budget=3,r=16",
          d + ",budget=8,dense_layers=none",
          d + ",budget=0.25,gqa=per-head,channels=3,dense_layers=none",
          d + ",budget=5,channels=16",
          d + ",budget=6,channels=1,dense_layers=none",
          "snapkv:budget=8,window=4",
          "snapkv:budget=0.25,window=2,kernel=3",
          "snapkv:budget=12,window=3,gqa=per-head,recompress=2",
          "pyramidkv:budget=8,window=2,beta=4",
          "pyramidkv:budget=0.5,window=1,kernel=1,gqa=per-head",
          "h2o:budget=8",
          "h2o:budget=0.25,recent=0.25,gqa=per-head",
          "h2o:budget=6,recent=0",
          "pyramidkv+fasa:fcs=calibrated,fc_sets=head,calib=" + calib_path() +
              ",budget=5,keep=12,window=2,dense_layers=none",
          "pyramidkv+fasa:fcs=calibrated,fc_sets=head,calib=" + calib_path() +
              ",budget=0.2,keep=0.5,window=1,gqa=per-head,dense_layers=none"};
}

TEST(PolicyInvariants, EveryRegisteredPolicyIsCovered) {
  std::set<std::string> covered;
  for (const auto& s : specs()) covered.insert(s.substr(0, s.find(':')));
  for (const auto& name : policy_names()) EXPECT_TRUE(covered.count(name)) << name;
}

// PyramidKV's budget of layer `row` at the first decode step after a prefill of n - 1 tokens:
// its paper's line from the bottom layer (hi) to the top one (lo), voted parts summing to
// L (k - 1 - window), plus window + 1 (computed here in doubles, apart from the policy's code).
int pyramid_reference(int k, int n, int window, int beta, int n_layers, int row) {
  const int v = k - 1 - window, prompt = n - 1;
  if (v <= 0 || n_layers == 1 || prompt < 2 * v) return k;
  int lo = v / beta, hi = 2 * v - lo;
  if (hi >= prompt - window) {
    hi = prompt - window;
    lo = 2 * v - hi;
  }
  std::vector<double> x(n_layers);
  std::vector<int> b(n_layers);
  int left = n_layers * v;
  for (int l = 0; l < n_layers; ++l) {
    x[l] = hi - (hi - lo) * static_cast<double>(l) / (n_layers - 1);
    b[l] = static_cast<int>(std::floor(x[l] + 1e-9));
    left -= b[l];
  }
  for (; left > 0; --left) {  // one more slot to the largest fraction (ties: the lower layer)
    int best = -1;
    for (int l = 0; l < n_layers; ++l) {
      if (b[l] < x[l] - 1e-9 && (best < 0 || x[l] - b[l] > x[best] - b[best] + 1e-9)) best = l;
    }
    b[best] += 1;
  }
  return b[row] + window + 1;
}

// The budget a selection of `layer` must stay within: the shared budget, or for pyramidkv the
// layer's own, whose mean over the layers is the shared budget.
int layer_budget(const std::string& spec, double budget, int n, int layer) {
  const int k = resolve_budget(budget, n);
  if (spec.rfind("pyramidkv:", 0) != 0) return k;
  std::string name;
  PolicyOptions o;
  parse_policy_spec(spec, &name, &o);
  const int window = o.count("window") ? std::stoi(o["window"]) : 32;
  const int beta = o.count("beta") ? std::stoi(o["beta"]) : 20;
  int sum = 0;
  for (int l = 0; l < kShape.n_layers; ++l) {
    sum += pyramid_reference(k, n, window, beta, kShape.n_layers, l);
  }
  EXPECT_EQ(sum, k * kShape.n_layers) << spec << " n=" << n;  // the mean is the budget
  return pyramid_reference(k, n, window, beta, kShape.n_layers, layer);
}

TEST(PolicyInvariants, SortedUniqueInRangeWithinBudgetDeterministic) {
  for (const auto& spec : specs()) {
    for (int n : {1, 3, 17, 40}) {
      RandomCache f(n);
      auto p = policy_from(spec);
      f.show(*p);
      PrefillObserver* prefill = facet<PrefillObserver>(*p);
      if (prefill && n > 1) {  // slots [0, n - 1) were a dense prefill
        std::mt19937 rng(n);
        std::normal_distribution<float> normal(0.0f, 2.0f);
        std::vector<float> pq(static_cast<size_t>(n - 1) * kShape.n_heads * kShape.head_dim);
        for (auto& x : pq) x = normal(rng);
        for (int l = 0; l < kShape.n_layers; ++l) {
          prefill->on_prefill_queries(f.cache, l, 0, n - 1, pq.data());
        }
      }
      for (int l = 0; l < kShape.n_layers; ++l) {
        expect_layer_equals_groups(*p, f, l, spec);
        for (int g = 0; g < kShape.n_kv_heads; ++g) {
          Selection a, b;
          p->select(f.query(l, g), a);
          p->select(f.query(l, g), b);
          EXPECT_EQ(a.all, b.all);
          EXPECT_EQ(a.slots, b.slots);
          EXPECT_EQ(a.head_slots, b.head_slots);
          if (a.all) continue;
          for (int h = 0; h < kShape.n_group(); ++h) {
            const auto& s = a.slots_for(h);
            ASSERT_FALSE(s.empty()) << spec;
            EXPECT_TRUE(std::is_sorted(s.begin(), s.end())) << spec;
            EXPECT_EQ(std::adjacent_find(s.begin(), s.end()), s.end()) << spec;
            EXPECT_GE(s.front(), 0);
            EXPECT_LT(s.back(), n);
            const std::string b_str = spec.substr(spec.find("budget=") + 7);
            const double budget = std::stod(b_str);
            EXPECT_LE(static_cast<int>(s.size()), layer_budget(spec, budget, n, l)) << spec;
          }
        }
      }
    }
  }
}

TEST(PolicyInvariants, BudgetCoveringTheCacheIsFullAttention) {
  const std::string path = ::testing::TempDir() + "/policy_tiny.gguf";
  test::TinySpec spec;
  spec.wtype = DType::Q8_0;
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  std::mt19937 rng(4);
  std::vector<int32_t> tokens(30);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  SessionOptions so;
  so.n_ctx = 64;
  Session full(model, so);
  const auto want = full.eval_all(tokens, 1);
  // A calibration of this very model, for the fasa policy.
  const std::string calib = test::calibrate_tiny(model, "policy_tiny_calib.json");
  for (const std::string& p :
       {std::string("oracle:budget=64"), std::string("oracle:budget=30,gqa=per-head"),
        std::string("streaming:budget=30"), std::string("quest:budget=30,page=4,dense_layers=none"),
        std::string("sparq:budget=64"), std::string("sparq:budget=30,r=1"),
        "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib +
            ",budget=64,dense_layers=none",
        "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib +
            ",budget=30,gqa=per-head,sink=4",
        "double-sparsity:calib=" + calib + ",budget=64,dense_layers=none",
        "double-sparsity:calib=" + calib + ",budget=30,gqa=per-head,channels=2",
        std::string("fasa:calib=online,budget=64,dense_layers=none"),
        std::string("double-sparsity:calib=online,budget=64,dense_layers=none"),
        std::string("snapkv:budget=30,window=4,gqa=per-head"), std::string("h2o:budget=30")}) {
    so.policy = p;
    Session s(model, so);
    EXPECT_EQ(s.eval_all(tokens, 1), want) << p;
  }
  // Policies that evict after a prefill: a dense prefill of 20 tokens, then decode steps.
  const std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + 20);
  auto prefill_then_decode = [&](Session& s) {
    std::vector<float> out = s.prefill(prompt);
    for (size_t i = 20; i < tokens.size(); ++i) {
      const auto& l = s.decode(tokens[i]);
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  };
  so.policy = "full";
  so.prefill_chunk = 8;
  Session full_pd(model, so);
  const auto want_pd = prefill_then_decode(full_pd);
  for (const std::string& p :
       {std::string("snapkv:budget=30,window=4"), std::string("snapkv:budget=64,gqa=per-head"),
        std::string("pyramidkv:budget=30,window=4"), std::string("h2o:budget=30,gqa=per-head"),
        "pyramidkv+fasa:fcs=calibrated,fc_sets=head,calib=" + calib +
            ",budget=64,keep=30,window=4,"
            "dense_layers=none",
        std::string("fasa:calib=online,budget=64,dense_layers=none"),
        std::string("pyramidkv+fasa:calib=online,budget=64,keep=30,window=4,dense_layers=none")}) {
    so.policy = p;
    Session s(model, so);
    EXPECT_EQ(prefill_then_decode(s), want_pd) << p;
  }
  for (const std::string& p :
       {std::string("snapkv:budget=8,window=4"),
        std::string("snapkv:budget=9,window=2,recompress=3"),
        std::string("pyramidkv:budget=8,window=2,beta=2"), std::string("h2o:budget=8"),
        std::string("h2o:budget=6,recent=0.2,gqa=per-head"),
        "pyramidkv+fasa:fcs=calibrated,fc_sets=head,calib=" + calib +
            ",budget=3,keep=8,window=2,"
            "dense_layers=none"}) {
    so.policy = p;
    Session sparse(model, so);
    EXPECT_NE(prefill_then_decode(sparse), want_pd) << p;
    EXPECT_LT(sparse.attn_stats().slots_read, sparse.attn_stats().slots_visible) << p;
    set_num_threads(1);
    Session one(model, so);
    const auto a = prefill_then_decode(one);
    set_num_threads(2);
    Session two(model, so);
    const auto b = prefill_then_decode(two);
    set_num_threads(0);
    EXPECT_EQ(a, b) << p;
  }
  so.prefill_chunk = 256;
  // A small budget really changes the computation (the selective path is taken) and does not
  // depend on the thread count.
  for (const std::string& p :
       {std::string("oracle:budget=2"), std::string("streaming:budget=3"),
        std::string("quest:budget=3,page=2,dense_layers=none"), std::string("sparq:budget=3"),
        std::string("sparq:budget=2,mean_correction=off"),
        "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib +
            ",budget=3,dense_layers=none",
        "double-sparsity:calib=" + calib + ",budget=3,dense_layers=none"}) {
    so.policy = p;
    Session sparse(model, so);
    EXPECT_NE(sparse.eval_all(tokens, 1), want) << p;
    EXPECT_LT(sparse.attn_stats().slots_read, sparse.attn_stats().slots_visible) << p;
    set_num_threads(1);
    Session one(model, so);
    const auto a = one.eval_all(tokens, 1);
    set_num_threads(2);
    Session two(model, so);
    const auto b = two.eval_all(tokens, 1);
    set_num_threads(0);
    EXPECT_EQ(a, b) << p;
  }
}

// Every policy's steps take their scratch from the session's workspace (core/workspace.h): no
// frame or object is taken on a thread with no workspace bound (the pool's workers see the
// session's), and the arenas reserved from the model and context hold every step (no block is
// added). FASA-M's prefetch thread reads into a workspace of its own.
TEST(SessionWorkspace, EveryPolicyDrawsOnlyFromItsSessionsWorkspace) {
  const std::string path = ::testing::TempDir() + "/policy_ws_tiny.gguf";
  test::TinySpec spec;
  spec.n_layers = 3;
  spec.wtype = DType::Q8_0;
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  std::mt19937 rng(23);
  std::vector<int32_t> tokens(60);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  const std::string calib = test::calibrate_tiny(model, "policy_ws_calib.json");
  const std::string c = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib,
                    d = "double-sparsity:calib=" + calib;
  const std::string m = ",variant=m,offload_dir=" + ::testing::TempDir();
  for (const std::string& p :
       {std::string("full"), std::string("oracle:budget=8,gqa=per-head"),
        std::string("streaming:budget=9"), std::string("quest:budget=12,page=4"),
        std::string("sparq:budget=10,r=4"), c + ",budget=8,dense_layers=none",
        c + ",budget=0.3,gqa=per-head,sink=2,recent=2", c + ",budget=8" + m + ",prefetch=on",
        c + ",budget=8,dense_layers=none,break_even=off" + m, d + ",budget=8,channels=4",
        std::string("snapkv:budget=12,window=4"), std::string("pyramidkv:budget=12,window=2"),
        std::string("h2o:budget=12")}) {
    SessionOptions so;
    so.n_ctx = 96;
    so.prefill_chunk = 16;
    so.policy = p;
    const uint64_t unbound = unbound_workspace_uses();
    {
      Session s(model, so);
      s.prefill(std::vector<int32_t>(tokens.begin(), tokens.begin() + 40));
      for (size_t i = 40; i < tokens.size(); ++i) s.decode(tokens[i]);
      const Workspace::Stats st = s.workspace_stats();
      EXPECT_GT(st.reserved, 0u) << p;
      EXPECT_GT(st.peak, 0u) << p;
      EXPECT_EQ(st.grows, 0u) << p;
    }
    EXPECT_EQ(unbound_workspace_uses(), unbound) << p;
  }
}

// Bytes read per decode step: dense reads every K and V row once per kv-head group; the oracle
// reads every key to choose, then its rows; FASA reads only its packed key slice to choose.
TEST(PolicyAccounting, BytesReadAndResident) {
  const std::string path = ::testing::TempDir() + "/policy_bytes_tiny.gguf";
  test::TinySpec spec;
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  std::mt19937 rng(8);
  std::vector<int32_t> tokens(40);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  const std::string calib = test::calibrate_tiny(model, "policy_bytes_calib.json");
  auto stats_of = [&](const std::string& policy, uint64_t* resident) {
    SessionOptions so;
    so.n_ctx = 64;
    so.policy = policy;
    Session s(model, so);
    s.prefill(std::vector<int32_t>(tokens.begin(), tokens.begin() + 30));
    for (int i = 30; i < 40; ++i) s.decode(tokens[i]);
    if (resident) *resident = s.policy().resident_bytes();
    return s.attn_stats();
  };
  const AttnStats full = stats_of("full", nullptr);
  EXPECT_EQ(full.decode_tokens, 10u);
  EXPECT_EQ(full.select_bytes, 0u);
  EXPECT_EQ(full.attend_bytes, full.dense_bytes);
  const AttnStats oracle = stats_of("oracle:budget=4", nullptr);
  EXPECT_EQ(oracle.dense_bytes, full.dense_bytes);
  EXPECT_EQ(2 * oracle.select_bytes, oracle.dense_bytes);  // every key, no values
  EXPECT_LT(oracle.attend_bytes, oracle.dense_bytes / 5);
  uint64_t resident = 0;
  const AttnStats fasa = stats_of("fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib +
                                      ",budget=4,n_tip=2,dense_layers=none",
                                  &resident);
  EXPECT_GT(resident, 0u);
  EXPECT_LT(fasa.select_bytes, oracle.select_bytes);
  EXPECT_LT(fasa.bytes_read(), oracle.bytes_read());
}

// Records the probabilities the driver hands a policy that learns from them (a
// ProbabilityObserver, as H2O), for a selection of every slot or of the even slots.
class ProbsSpy final : public AttentionPolicy, public ProbabilityObserver {
 public:
  explicit ProbsSpy(bool even) : even_(even) {}
  std::string_view name() const override { return "probs-spy"; }
  void select(const AttnQuery& q, Selection& out) override {
    if (!even_) {
      out.set_all();
      return;
    }
    out.all = false;
    out.per_head = false;
    out.slots.clear();
    for (int s = 0; s < q.n_visible; s += 2) out.slots.push_back(s);
  }
  void on_probs(int, int head, const Selection&, const float* probs, int n) override {
    got[head].assign(probs, probs + n);
  }
  std::map<int, std::vector<float>> got;  // head -> its probabilities

 private:
  bool even_;
};

// Decode attention and the probabilities for H2O / SnapKV share one parallel region: outputs
// and probabilities equal attend_probs' on the caller, whatever the thread count (several chunk
// jobs per head, so the region's cost-balanced ranges split the items).
TEST(AttentionDriver, ProbsAndOutputsDoNotDependOnThreads) {
  const int n = 700;  // 6 chunks of 128 keys
  RandomCache f(n, 23);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kShape.head_dim));
  for (const bool even : {false, true}) {
    ProbsSpy ref_sel(even);
    std::map<int, std::vector<float>> want;  // [layer * n_heads + head] -> probabilities
    std::vector<std::vector<float>> want_out(kShape.n_layers);
    set_num_threads(1);
    for (int l = 0; l < kShape.n_layers; ++l) {
      std::vector<Selection> sel(kShape.n_kv_heads);
      for (int g = 0; g < kShape.n_kv_heads; ++g) ref_sel.select(f.query(l, g), sel[g]);
      for (int h = 0; h < kShape.n_heads; ++h) {
        const Selection& se = sel[h / kShape.n_group()];
        const KvRows rows{f.cache.k_rows(l, h / kShape.n_group()),
                          f.cache.v_rows(l, h / kShape.n_group()), f.cache.type(), kShape.head_dim};
        const int m = se.all ? n : static_cast<int>(se.slots.size());
        std::vector<float>& p = want[l * kShape.n_heads + h];
        p.resize(m);
        attend_probs(f.q.data() + h * kShape.head_dim, rows, se.all ? nullptr : se.slots.data(), m,
                     scale, p.data());
      }
    }
    for (const int nt : {2, 3, 1}) {
      set_num_threads(nt);
      for (int l = 0; l < kShape.n_layers; ++l) {
        ProbsSpy spy(even);
        const std::vector<float> out = decode_through_driver(f, spy, l);
        if (want_out[l].empty()) want_out[l] = out;
        EXPECT_EQ(out, want_out[l]) << "layer " << l << ", " << nt << " threads";
        ASSERT_EQ(spy.got.size(), static_cast<size_t>(kShape.n_heads));
        for (int h = 0; h < kShape.n_heads; ++h) {
          EXPECT_EQ(spy.got[h], want[l * kShape.n_heads + h])
              << "layer " << l << " head " << h << ", " << nt << " threads, even=" << even;
        }
      }
    }
    set_num_threads(0);
  }
}

TEST(PolicyOptionsTest, BadOptionsAreErrors) {
  EXPECT_THROW(policy_from("oracle"), Error);  // no budget
  EXPECT_THROW(policy_from("oracle:budget=0"), Error);
  EXPECT_THROW(policy_from("oracle:budget=-4"), Error);
  EXPECT_THROW(policy_from("oracle:budget=abc"), Error);
  EXPECT_THROW(policy_from("oracle:budget=2.5"), Error);
  EXPECT_THROW(policy_from("oracle:budget=8,gqa=sometimes"), Error);
  EXPECT_THROW(policy_from("oracle:budget=8,color=red"), Error);
  EXPECT_THROW(policy_from("oracle:budget"), Error);  // not key=value
  EXPECT_THROW(policy_from("streaming"), Error);      // no budget
  EXPECT_THROW(policy_from("streaming:budget=8,sinks=-1"), Error);
  EXPECT_THROW(policy_from("streaming:budget=8,sinks=x"), Error);
  EXPECT_THROW(policy_from("streaming:budget=8,window=3"), Error);
  EXPECT_THROW(policy_from("full:budget=8"), Error);
  EXPECT_THROW(policy_from("nope"), Error);
  const std::string c = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path();
  EXPECT_NE(facet<OnlineCalibrationReport>(*policy_from("fasa:budget=8")), nullptr);  // online
  EXPECT_THROW(policy_from(c), Error);                                                // no budget
  EXPECT_THROW(policy_from("fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=/"
                           "nonexistent.json,budget=8"),
               Error);
  EXPECT_THROW(policy_from(c + ",budget=8,n_tip=0"), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,n_tip=2.5"), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,gqa=maybe"), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,dense_layers=7"), Error);  // only 2 layers
  EXPECT_THROW(policy_from(c + ",budget=8,dense_layers=x"), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,sink=-1"), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,variant=m,offload_dir=/nonexistent/dir"), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,offload_dir=" + ::testing::TempDir()), Error);  // c
  EXPECT_THROW(policy_from(c + ",budget=8,variant=m,offload_dir="), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,variant=m,prefetch=maybe"), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,prefetch=on"), Error);   // variant c has no file tier
  EXPECT_THROW(policy_from(c + ",budget=8,row_cache=16"), Error);  // nor a row cache
  EXPECT_THROW(policy_from(c + ",budget=8,variant=m,row_cache=-1"), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,variant=m,row_cache=lots"), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,variant=z"), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,speed=11"), Error);
  EXPECT_THROW(policy_from(c + ",budget=8,fcs=best"), Error);
  expect_policy_error(c + ",budget=8,fcs=mass", "fcs=mass needs a calibration with channel");
  EXPECT_NO_THROW(policy_from(c + ",budget=8,dense_layers=0+1,variant=c"));
  EXPECT_EQ(resolve_budget(0.1, 95), 10);
  EXPECT_EQ(resolve_budget(256, 100), 100);
  EXPECT_EQ(resolve_budget(0.001, 10), 1);
}

}  // namespace
}  // namespace fasa
