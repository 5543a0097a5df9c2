// Invariants every registered policy must keep, and the oracle against a plain reference.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "fasa/attention/attention.h"
#include "fasa/attention/calibration.h"
#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/calibrate/calibrator.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/core/workspace.h"
#include "fasa/engine/session.h"
#include "fasa/kernels/attend.h"
#include "fasa/model/model.h"
#include "support/random_calibration.h"
#include "support/tiny_calibration.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

const AttnShape kShape{2, 4, 2, 16, {}};  // n_layers, n_heads, n_kv_heads, head_dim

// A cache with n random tokens and a random query per head.
struct Fixture {
  KvCache cache;
  std::vector<float> q;  // [n_heads, head_dim]
  // integer: small whole numbers, so every logit (full or per FC) is exact in float.
  explicit Fixture(int n, uint32_t seed = 1, bool integer = false)
      : cache(kShape, KvType::F32, std::max(64, n)) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> small(-3, 3);
    auto nd = [&](std::mt19937& r) { return integer ? static_cast<float>(small(r)) : normal(r); };
    std::vector<float> k(kShape.head_dim), v(kShape.head_dim);
    std::vector<int32_t> pos(n);
    for (int t = 0; t < n; ++t) {
      pos[t] = t;
      for (int l = 0; l < kShape.n_layers; ++l) {
        for (int g = 0; g < kShape.n_kv_heads; ++g) {
          for (auto& x : k) x = nd(rng);
          for (auto& x : v) x = nd(rng);
          cache.store(l, g, t, k.data(), v.data());
        }
      }
    }
    cache.commit(n, pos.data());
    q.resize(kShape.n_heads * kShape.head_dim);
    for (auto& x : q) x = 2.0f * nd(rng);
  }
  AttnQuery query(int layer, int kv_head) const {
    AttnQuery a;
    a.layer = layer;
    a.kv_head = kv_head;
    a.q = q.data() + kv_head * kShape.n_group() * kShape.head_dim;
    a.n_group = kShape.n_group();
    a.pos = cache.n_used();
    a.n_visible = cache.n_used();
    a.cache = &cache;
    return a;
  }
};

PolicyContext test_context(const std::string& sha = "tiny-test-model") {
  PolicyContext ctx;
  ctx.shape = kShape;
  ctx.arch = "llama";
  ctx.rope_dim = kShape.head_dim;
  ctx.model_sha256 = [sha] { return sha; };
  return ctx;
}

// A calibration for kShape with random agreements (what matters here is the FC ranking).
const std::string& calib_path() {
  static const std::string path =
      test::write_random_calibration(kShape, "tiny-test-model", "policy_test_calib");
  return path;
}

// The same calibration with Double Sparsity's channel importance (format version 3).
const std::string& ds_calib_path() {
  static const std::string path = [] {
    Calibration c = load_calibration(calib_path());
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    c.channel_importance.resize(c.layers.size() * c.n_heads * c.head_dim);
    for (auto& x : c.channel_importance) x = u(rng);
    const std::string p =
        ::testing::TempDir() + "/policy_test_ds_calib_" + std::to_string(getpid()) + ".json";
    save_calibration(c, p);
    return p;
  }();
  return path;
}

// The same with compound CA sets of 4 FCs per head and per kv head (format version 4).
const std::string& compound_calib_path() {
  static const std::string path = [] {
    Calibration c = load_calibration(ds_calib_path());
    std::mt19937 rng(6);
    c.n_compound = 4;
    auto sets = [&](size_t rows, std::vector<int32_t>& fcs, std::vector<float>& ca) {
      for (size_t r = 0; r < rows; ++r) {
        std::vector<int32_t> perm(c.n_fc());
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        for (int s = 0; s < c.n_compound; ++s) {
          fcs.push_back(perm[s]);
          ca.push_back(0.3f + 0.1f * s + 0.05f * static_cast<float>(r % 3));
        }
      }
    };
    sets(c.layers.size() * c.n_heads, c.compound, c.compound_ca);
    sets(c.layers.size() * c.n_kv_heads, c.group_compound, c.group_compound_ca);
    const std::string p =
        ::testing::TempDir() + "/policy_test_v4_calib_" + std::to_string(getpid()) + ".json";
    save_calibration(c, p);
    return p;
  }();
  return path;
}

std::unique_ptr<AttentionPolicy> policy_from(const std::string& spec,
                                             const PolicyContext& ctx = test_context()) {
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  return make_policy(name, ctx, opts);
}

// make_policy(spec) throws a fasa::Error whose message contains `what`.
void expect_policy_error(const std::string& spec, const std::string& what,
                         const PolicyContext& ctx = test_context()) {
  try {
    policy_from(spec, ctx);
    ADD_FAILURE() << spec << " was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << spec << ": " << e.what();
  }
}

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

// The whole layer at once (select_layer, split over threads) equals group by group (select).
void expect_layer_equals_groups(AttentionPolicy& p, const Fixture& f, int layer,
                                const std::string& spec) {
  std::vector<AttnQuery> qs;
  for (int g = 0; g < kShape.n_kv_heads; ++g) qs.push_back(f.query(layer, g));
  std::vector<Selection> together(kShape.n_kv_heads);
  p.select_layer(qs.data(), kShape.n_kv_heads, together.data());
  for (int g = 0; g < kShape.n_kv_heads; ++g) {
    Selection a;
    p.select(qs[g], a);
    EXPECT_EQ(a.all, together[g].all) << spec;
    EXPECT_EQ(a.slots, together[g].slots) << spec;
    EXPECT_EQ(a.head_slots, together[g].head_slots) << spec;
    EXPECT_EQ(a.bytes_read, together[g].bytes_read) << spec;
    EXPECT_EQ(a.mix_alpha, together[g].mix_alpha) << spec;  // mean_value's, bit for bit
  }
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
      Fixture f(n);
      auto p = policy_from(spec);
      for (int l = 0; l < kShape.n_layers; ++l) p->on_append(f.cache, l, 0, n);
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

// Long contexts take FASA's staged path (TIP in slot-range jobs across kv heads): the whole
// layer at once still equals group by group, shared and per head.
TEST(FasaPolicy, StagedLayerSelectionEqualsGroupByGroup) {
  const int n = 5000;
  Fixture f(n, 9);
  const std::string c =
      "fasa:fcs=calibrated,fc_sets=head,calib=" + calib_path() + ",dense_layers=none,budget=";
  for (const std::string& spec :
       {c + "300,mean_value=off", c + "0.05,gqa=per-head,sink=4,recent=8,mean_value=off",
        c + "300,mean_value=on", c + "0.05,gqa=per-head,sink=4,recent=8,mean_value=on"}) {
    auto p = policy_from(spec);
    for (int l = 0; l < kShape.n_layers; ++l) p->on_append(f.cache, l, 0, n);
    for (int l = 0; l < kShape.n_layers; ++l) {
      Selection a;
      p->select(f.query(l, 0), a);
      ASSERT_FALSE(a.all) << spec;  // really the staged path, not dense
      expect_layer_equals_groups(*p, f, l, spec);
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

// FASA-M keeps only the packed key slice in RAM and fetches the selected rows from a file; it
// must compute exactly what FASA-C computes (same selection, same data), with less RAM.
TEST(FasaPolicy, MemoryVariantEqualsComputeVariant) {
  const std::string path = ::testing::TempDir() + "/policy_m_tiny.gguf";
  test::TinySpec spec;
  spec.n_layers = 3;
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  std::mt19937 rng(21);
  std::vector<int32_t> tokens(70);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  const std::string calib = test::calibrate_tiny(model, "policy_m_calib.json");
  const std::string dir = ::testing::TempDir();
  for (KvType type : {KvType::F16, KvType::F32}) {
    for (const std::string opts : {",budget=6", ",budget=0.2,gqa=per-head,sink=2,recent=3",
                                   ",budget=9,dense_layers=none,n_tip=2"}) {
      SessionOptions so;
      so.n_ctx = 96;
      so.kv_type = type;
      so.prefill_chunk = 16;  // several prefill chunks over the file tier
      // break_even=off: the variants select alike (FASA-M never falls back to dense).
      so.policy = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib + opts +
                  ",break_even=off";
      Session c(model, so);
      so.policy += ",variant=m,offload_dir=" + dir + ",prefetch=on";
      Session m(model, so);
      ASSERT_TRUE(m.cache().tiered());
      const std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + 40);
      EXPECT_EQ(c.prefill(prompt), m.prefill(prompt)) << opts;
      for (size_t i = 40; i < tokens.size(); ++i) {
        ASSERT_EQ(c.decode(tokens[i]), m.decode(tokens[i])) << opts << " token " << i;
      }
      const AttnStats& sc = c.attn_stats();
      const AttnStats& sm = m.attn_stats();
      EXPECT_EQ(sc.slots_read, sm.slots_read);
      EXPECT_EQ(sc.select_bytes, sm.select_bytes);
      EXPECT_EQ(sc.attend_bytes, sm.attend_bytes);
      EXPECT_EQ(sc.tier_reads, 0u);
      EXPECT_GT(sm.tier_reads, 0u);
      EXPECT_GT(sm.tier_read_bytes, 0u);
      // Prefetch (asked for): the rows each layer's step ranked just past its budget are read in
      // the background for its next step, which selects some of them; every prefetched byte is
      // a device byte.
      EXPECT_LE(sm.tier_prefetch_hits, sm.tier_prefetch_rows);
      EXPECT_LE(sm.tier_prefetch_bytes, sm.tier_read_bytes);
      if (opts == std::string(",budget=6")) {
        EXPECT_GT(sm.tier_prefetch_rows, 0u);
        EXPECT_GT(sm.tier_prefetch_hits, 0u);
        EXPECT_GT(sm.tier_prefetch_bytes, 0u);
        // Another FASA-M session decodes exactly as FASA-C does.
        auto same_as_c = [&](Session& other, const char* what) {
          c.reset();
          EXPECT_EQ(c.prefill(prompt), other.prefill(prompt)) << what;
          for (size_t i = 40; i < tokens.size(); ++i) {
            ASSERT_EQ(c.decode(tokens[i]), other.decode(tokens[i])) << what << " token " << i;
          }
        };
        // Off: the same outputs, no background reads.
        SessionOptions off = so;
        off.policy.replace(off.policy.find(",prefetch=on"), 12, ",prefetch=off");
        Session m2(model, off);
        same_as_c(m2, "prefetch=off");
        EXPECT_EQ(m2.attn_stats().tier_prefetch_rows, 0u);
        EXPECT_EQ(m2.attn_stats().tier_prefetch_hits, 0u);
        // The RAM row cache (on by default, 2 x budget rows): consecutive steps find rows there;
        // without it (row_cache=0) the same outputs, every row from the file.
        EXPECT_GT(sm.tier_cache_hits, 0u);
        EXPECT_LE(sm.tier_cache_hits, sm.tier_rows);
        SessionOptions none = off;
        none.policy += ",row_cache=0";
        Session m3(model, none);
        same_as_c(m3, "row_cache=0");
        EXPECT_EQ(m3.attn_stats().tier_cache_hits, 0u);
        EXPECT_EQ(m3.attn_stats().tier_rows, m2.attn_stats().tier_rows);
        EXPECT_GT(m3.attn_stats().tier_read_bytes, m2.attn_stats().tier_read_bytes);
      }
      // RAM: FASA-C holds the whole cache plus its packed slice; FASA-M the slice (+ dense layers)
      // and its row cache (here up to 0.8 of the slots with budget=0.2 per head).
      const uint64_t ram_c = c.cache().ram_bytes() + c.policy().resident_bytes();
      const uint64_t ram_m =
          m.cache().ram_bytes() + m.policy().resident_bytes() - m.cache().row_cache_bytes();
      // (Small caches: the RAM tails of partly filled file blocks weigh in.)
      EXPECT_LT(ram_m, ram_c / 2) << opts;
      // The selecting layers are in the file; a dense layer (default: layer 0) stays in RAM.
      const bool none_dense = opts.find("dense_layers=none") != std::string::npos;
      for (int l = 0; l < spec.n_layers; ++l) {
        EXPECT_EQ(m.cache().offloaded(l), l > 0 || none_dense) << opts << " layer " << l;
      }
      EXPECT_GT(m.cache().file_bytes(), 0u);
      // reset() empties the file tier too, and the sequence can start again.
      m.reset();
      c.reset();
      EXPECT_EQ(m.cache().file_bytes(), 0u);
      EXPECT_EQ(c.prefill(prompt), m.prefill(prompt));
    }
  }
}

// FASA-M with a slice of its own (slice=f16|q8|q4): the policy scores from its slice in RAM and
// the file holds whole K and V rows; it computes exactly what FASA-C with that slice computes.
TEST(FasaPolicy, MemoryVariantWithItsOwnSliceEqualsComputeVariant) {
  const std::string path = ::testing::TempDir() + "/policy_m_slice_tiny.gguf";
  test::TinySpec spec;
  spec.n_layers = 3;
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  std::mt19937 rng(22);
  std::vector<int32_t> tokens(75);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  const std::string calib = test::calibrate_tiny(model, "policy_m_slice_calib.json");
  const std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + 40);
  for (KvType type : {KvType::F16, KvType::F32}) {
    for (const std::string slice : {"q8", "q4", "f16"}) {
      SessionOptions so;
      so.n_ctx = 96;
      so.kv_type = type;
      so.prefill_chunk = 16;
      so.policy = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib +
                  ",budget=6,break_even=off,slice=" + slice;
      Session c(model, so);
      so.policy += ",variant=m,offload_dir=" + ::testing::TempDir();
      Session m(model, so);
      ASSERT_TRUE(m.cache().tiered());
      for (int round = 0; round < 2; ++round) {  // and again after reset()
        EXPECT_EQ(c.prefill(prompt), m.prefill(prompt)) << slice;
        for (size_t i = 40; i < tokens.size(); ++i) {
          ASSERT_EQ(c.decode(tokens[i]), m.decode(tokens[i])) << slice << " token " << i;
        }
        const AttnStats& sc = c.attn_stats();
        const AttnStats& sm = m.attn_stats();
        EXPECT_EQ(sc.select_bytes, sm.select_bytes) << slice;
        EXPECT_EQ(sc.attend_bytes, sm.attend_bytes) << slice;
        EXPECT_GT(sm.tier_read_bytes, 0u) << slice;
        // The same slice, in the policy; the cache keeps no hot dims, the file whole rows.
        EXPECT_EQ(m.policy().resident_bytes(), c.policy().resident_bytes()) << slice;
        EXPECT_GT(m.policy().resident_bytes(), 0u) << slice;
        const uint64_t whole = 2ull * m.cache().row_bytes() * spec.n_kv_heads * 2 *
                               static_cast<uint64_t>(m.n_past());  // 2 offloaded layers
        EXPECT_LE(m.cache().file_bytes(), whole) << slice;
        EXPECT_GE(m.cache().file_bytes() + 2ull * spec.n_kv_heads * m.cache().tier_block_bytes(),
                  whole)
            << slice;
        for (int l = 1; l < spec.n_layers; ++l) {
          EXPECT_TRUE(m.cache().offloaded(l));
          EXPECT_TRUE(m.cache().hot_dims(l, 0).empty());
        }
        c.reset();
        m.reset();
      }
    }
  }
}

// gemma3-style, four layers: sliding (window 5), global, sliding, global.
test::TinySpec hybrid_spec() {
  test::TinySpec s;
  s.arch = "gemma3";
  s.n_layers = 4;
  s.sliding_window = 5;
  s.window_pattern = 2;
  s.rope_base_local = 100.0f;
  s.wtype = DType::Q8_0;
  return s;
}

// On a hybrid stack FASA runs on the global layers only (the sliding-window layers attend over
// their window, outside any policy): a budget covering the cache is full attention bit for bit,
// a small one changes only what the global layers read, the policy keeps side data for global
// layers only, and FASA-M never offloads a sliding-window layer.
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

TEST(FasaPolicy, HybridStackUsesTheGlobalLayersOnly) {
  const std::string path = ::testing::TempDir() + "/policy_hybrid_tiny.gguf";
  const test::TinySpec spec = hybrid_spec();
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  std::mt19937 rng(31);
  std::vector<int32_t> tokens(40);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  SessionOptions so;
  so.n_ctx = 64;
  so.prefill_chunk = 8;  // small rings: a window of 5 plus one chunk
  Session full(model, so);
  const auto want = full.eval_all(tokens, 1);
  const std::string calib = test::calibrate_tiny(model, "policy_hybrid_calib.json");
  EXPECT_EQ(load_calibration(calib).layers, (std::vector<int>{1, 3}));
  const std::string c = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib;
  for (const std::string& p : {std::string("oracle:budget=64"), c + ",budget=64",
                               c + ",budget=40,gqa=per-head,sink=4,dense_layers=none"}) {
    so.policy = p;
    Session s(model, so);
    EXPECT_EQ(s.eval_all(tokens, 1), want) << p;
  }
  // A small budget: the global layers read less, the sliding-window layers their windows.
  so.policy = c + ",budget=3,n_tip=8";  // every FC: the packed slice is all 16 key dims
  Session sparse(model, so);
  EXPECT_NE(sparse.eval_all(tokens, 1), want);
  const AttnStats& st = sparse.attn_stats();
  // 40 decode steps x 2 kv-head groups x 2 sliding layers, each reading min(t + 1, 5) rows.
  EXPECT_EQ(st.window_slots, (1u + 2 + 3 + 4 + 5 * 36) * 2 * 2);
  EXPECT_EQ(st.slots_visible - st.window_slots, (40u * 41 / 2) * 2 * 2);
  EXPECT_LT(st.global_read_fraction(), 0.2);
  EXPECT_EQ(full.attn_stats().window_slots, st.window_slots);
  EXPECT_DOUBLE_EQ(full.attn_stats().global_read_fraction(), 1.0);
  // Side data for the 2 global layers only: 40 slots x 2 kv heads x 16 dims x 2 bytes (f16),
  // and half of it with one of them dense.
  EXPECT_EQ(sparse.policy().resident_bytes(), 2u * 40 * 2 * 16 * 2);
  so.policy = c + ",budget=3,n_tip=8,dense_layers=3";
  Session one_dense(model, so);
  one_dense.eval_all(tokens, 1);
  EXPECT_EQ(one_dense.policy().resident_bytes(), 1u * 40 * 2 * 16 * 2);

  // FASA-M: the global layers go to the file, the sliding-window rings stay in RAM; the outputs
  // equal FASA-C's.
  for (const std::string opts : {",budget=4", ",budget=0.2,gqa=per-head,sink=2,dense_layers=1"}) {
    so.policy = c + opts + ",break_even=off";  // the variants select alike
    Session fc(model, so);
    so.policy += ",variant=m,offload_dir=" + ::testing::TempDir();
    Session fm(model, so);
    ASSERT_TRUE(fm.cache().tiered());
    // Global layers that select go to the file; a dense global layer (dense_layers=1) stays.
    const bool dense1 = opts.find("dense_layers=1") != std::string::npos;
    for (int l = 0; l < spec.n_layers; ++l) {
      EXPECT_EQ(fm.cache().offloaded(l), l % 2 == 1 && !(dense1 && l == 1)) << l;
    }
    const std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + 25);
    EXPECT_EQ(fc.prefill(prompt), fm.prefill(prompt)) << opts;
    for (size_t i = 25; i < tokens.size(); ++i) {
      ASSERT_EQ(fc.decode(tokens[i]), fm.decode(tokens[i])) << opts << " token " << i;
    }
    EXPECT_EQ(fc.attn_stats().slots_read, fm.attn_stats().slots_read);
    EXPECT_GT(fm.attn_stats().tier_reads, 0u);
  }

  // dense_layers names global layers only; the default layer 0 is a sliding-window layer here,
  // so no global layer is dense by default.
  const PolicyContext ctx = policy_context(model);
  try {
    policy_from(c + ",budget=4,dense_layers=2", ctx);
    ADD_FAILURE() << "a sliding-window dense layer was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("layer 2 is a sliding-window layer"), std::string::npos) << msg;
    EXPECT_NE(msg.find("global layers 1, 3"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(policy_from(c + ",budget=4,dense_layers=1+3", ctx));
  // A calibration of every layer (this kShape one is also another model) is refused.
  PolicyContext hybrid = test_context();
  hybrid.shape.layer_window = {5, 0};
  try {
    policy_from("fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() +
                    ",budget=8",
                hybrid);
    ADD_FAILURE() << "a calibration of the sliding-window layer was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("covers layers 0, 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("global-attention layers are 1"), std::string::npos) << msg;
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

// Break-even: FASA selects only while its packed slice plus the selected rows read less than
// 0.8 of dense attention's K/V bytes; otherwise it attends densely and flags it.
TEST(FasaPolicy, AttendsDenselyBelowItsBreakEven) {
  const int n = 45;
  Fixture f(n, 12, /*integer=*/true);
  const std::string c = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() +
                        ",dense_layers=none";
  auto run = [&](const std::string& spec, int* fallbacks) {
    auto p = policy_from(c + "," + spec);
    for (int l = 0; l < kShape.n_layers; ++l) p->on_append(f.cache, l, 0, n);
    int selective = 0;
    *fallbacks = 0;
    for (int l = 0; l < kShape.n_layers; ++l) {
      for (int g = 0; g < kShape.n_kv_heads; ++g) {
        Selection a;
        p->select(f.query(l, g), a);
        selective += !a.all;
        *fallbacks += a.dense_fallback;
        EXPECT_TRUE(!a.dense_fallback || a.all);
      }
    }
    return selective;
  };
  const int groups = kShape.n_layers * kShape.n_kv_heads;
  int fb = 0;
  // Whole K as the slice (1/2 of K+V) + 20 of 45 rows (0.44): 0.94 of dense: not worth it.
  EXPECT_EQ(run("n_tip=8,budget=20", &fb), 0);
  EXPECT_EQ(fb, groups);
  EXPECT_EQ(run("n_tip=8,budget=20,break_even=off", &fb), groups);  // asked to select anyway
  EXPECT_EQ(fb, 0);
  // One FC (1/16 of K+V) + 7 rows (0.16): 0.22 of dense: selects.
  EXPECT_EQ(run("n_tip=1,budget=7", &fb), groups);
  EXPECT_EQ(fb, 0);
  // A budget covering the context is plain dense attention, not a fallback.
  EXPECT_EQ(run("n_tip=1,budget=45", &fb), 0);
  EXPECT_EQ(fb, 0);
  EXPECT_THROW(policy_from(c + ",budget=7,break_even=maybe"), Error);
}

// With every FC dominant, TIP scores are the full logits: FASA selects exactly what the oracle
// selects (integer data keeps every logit exact, so no rounding can reorder near-ties).
TEST(FasaPolicy, AllFrequencyChunksSelectLikeTheOracle) {
  const int n = 45;
  Fixture f(n, 11, /*integer=*/true);
  // break_even=off: with every FC the slice is the whole K, which never pays (next test).
  const std::string c = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() +
                        ",dense_layers=none,n_tip=8,break_even=off";
  for (const char* gqa : {"shared", "per-head"}) {
    auto fasa = policy_from(c + ",budget=7,gqa=" + gqa);
    auto oracle = policy_from(std::string("oracle:budget=7,gqa=") + gqa);
    for (int l = 0; l < kShape.n_layers; ++l) fasa->on_append(f.cache, l, 0, n);
    for (int l = 0; l < kShape.n_layers; ++l) {
      for (int g = 0; g < kShape.n_kv_heads; ++g) {
        Selection a, b;
        fasa->select(f.query(l, g), a);
        oracle->select(f.query(l, g), b);
        EXPECT_EQ(a.slots, b.slots) << gqa;
        EXPECT_EQ(a.head_slots, b.head_slots) << gqa;
      }
    }
  }
  // Not vacuous: with one FC per head the selections differ somewhere.
  auto one = policy_from("fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() +
                         ",dense_layers=none,n_tip=1,budget=7");
  auto oracle = policy_from("oracle:budget=7");
  for (int l = 0; l < kShape.n_layers; ++l) one->on_append(f.cache, l, 0, n);
  int differ = 0;
  for (int l = 0; l < kShape.n_layers; ++l) {
    for (int g = 0; g < kShape.n_kv_heads; ++g) {
      Selection a, b;
      one->select(f.query(l, g), a);
      oracle->select(f.query(l, g), b);
      differ += a.slots != b.slots;
    }
  }
  EXPECT_GT(differ, 0);
}

// fcs=mass takes, per head, the n_tip FCs whose two dims carry the most channel importance: the
// same as a calibration whose agreements are those sums. And it is not the CA ranking.
TEST(FasaPolicy, MassRankedFcsAreTheHeaviestPairs) {
  const int n = 45;
  Fixture f(n, 12);
  Calibration by_mass = load_calibration(ds_calib_path());
  for (int l : by_mass.layers) {
    for (int h = 0; h < by_mass.n_heads; ++h) {
      const float* ci = by_mass.channels(l, h);
      float* ca = by_mass.mean_ca.data() +
                  (static_cast<size_t>(by_mass.row(l)) * by_mass.n_heads + h) * by_mass.n_fc();
      for (int fc = 0; fc < by_mass.n_fc(); ++fc) {
        ca[fc] = ci[by_mass.fcs[fc].a] + ci[by_mass.fcs[fc].b];
      }
    }
  }
  by_mass.rank_all();
  const std::string path =
      ::testing::TempDir() + "/policy_test_mass_calib_" + std::to_string(getpid()) + ".json";
  save_calibration(by_mass, path);
  const std::string opts = ",budget=7,n_tip=2,dense_layers=none";
  auto mass = policy_from("fasa:calib=" + ds_calib_path() + opts + ",fcs=mass,fc_sets=head");
  auto same = policy_from("fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + path + opts);
  auto by_ca = policy_from(
      "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + ds_calib_path() + opts);
  for (auto* p : {mass.get(), same.get(), by_ca.get()}) {
    for (int l = 0; l < kShape.n_layers; ++l) p->on_append(f.cache, l, 0, n);
  }
  int differ = 0;
  for (int l = 0; l < kShape.n_layers; ++l) {
    for (int g = 0; g < kShape.n_kv_heads; ++g) {
      Selection a, b, c;
      mass->select(f.query(l, g), a);
      same->select(f.query(l, g), b);
      by_ca->select(f.query(l, g), c);
      EXPECT_EQ(a.slots, b.slots) << l << " " << g;
      differ += a.slots != c.slots;
    }
  }
  EXPECT_GT(differ, 0);
  std::remove(path.c_str());
}

TEST(FasaPolicy, DenseLayersSinksAndRecent) {
  const int n = 40;
  Fixture f(n, 5);
  auto p = policy_from("fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() +
                       ",budget=8,sink=2,recent=3");
  for (int l = 0; l < kShape.n_layers; ++l) p->on_append(f.cache, l, 0, n);
  Selection s0, s1;
  p->select(f.query(0, 0), s0);  // layer 0 is dense by default
  EXPECT_TRUE(s0.all);
  p->select(f.query(1, 1), s1);
  ASSERT_FALSE(s1.all);
  ASSERT_EQ(s1.slots.size(), 8u);
  for (int32_t t : {0, 1, 37, 38, 39}) {
    EXPECT_TRUE(std::binary_search(s1.slots.begin(), s1.slots.end(), t)) << t;
  }
}

TEST(FasaPolicy, CalibrationMustMatchTheModel) {
  const std::string c =
      "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() + ",budget=8";
  EXPECT_NO_THROW(policy_from(c));
  EXPECT_THROW(policy_from(c, test_context("another-model")), Error);
  PolicyContext neox = test_context();
  neox.rope_layout = RopeLayout::Neox;
  EXPECT_THROW(policy_from(c, neox), Error);
  PolicyContext wide = test_context();
  wide.shape.n_heads = 8;
  EXPECT_THROW(policy_from(c, wide), Error);
}

// Oracle against a plain reference: per head, top-k of q.k; shared, top-k of summed softmax.
TEST(OraclePolicy, MatchesPlainTopK) {
  const int n = 37, k = 9, hd = kShape.head_dim;
  Fixture f(n, 7);
  auto shared = policy_from("oracle:budget=9");
  auto per_head = policy_from("oracle:budget=9,gqa=per-head");
  for (int g = 0; g < kShape.n_kv_heads; ++g) {
    const AttnQuery q = f.query(1, g);
    const auto* K = static_cast<const float*>(f.cache.k_rows(1, g));  // [capacity, head_dim]
    std::vector<double> mass(n, 0.0);
    Selection ph, sh;
    per_head->select(q, ph);
    shared->select(q, sh);
    ASSERT_TRUE(ph.per_head);
    for (int h = 0; h < kShape.n_group(); ++h) {
      std::vector<double> logit(n);
      for (int j = 0; j < n; ++j) {
        double d = 0.0;
        for (int i = 0; i < hd; ++i) d += static_cast<double>(q.q[h * hd + i]) * K[j * hd + i];
        logit[j] = d;
      }
      std::vector<int32_t> idx(n);
      for (int j = 0; j < n; ++j) idx[j] = j;
      std::sort(idx.begin(), idx.end(), [&](int a, int b) { return logit[a] > logit[b]; });
      std::vector<int32_t> want(idx.begin(), idx.begin() + k);
      std::sort(want.begin(), want.end());
      EXPECT_EQ(ph.head_slots[h], want);  // recall 1
      const double mx = *std::max_element(logit.begin(), logit.end());
      double z = 0.0;
      for (double x : logit) z += std::exp((x - mx) / std::sqrt(hd));
      for (int j = 0; j < n; ++j) mass[j] += std::exp((logit[j] - mx) / std::sqrt(hd)) / z;
    }
    std::vector<int32_t> idx(n);
    for (int j = 0; j < n; ++j) idx[j] = j;
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return mass[a] > mass[b]; });
    std::vector<int32_t> want(idx.begin(), idx.begin() + k);
    std::sort(want.begin(), want.end());
    EXPECT_FALSE(sh.per_head);
    EXPECT_EQ(sh.slots, want);
  }
}

TEST(StreamingPolicy, SinksThenTheNewestSlots) {
  Fixture f(40);
  auto p = policy_from("streaming:budget=10,sinks=4");
  Selection s;
  p->select(f.query(0, 0), s);
  ASSERT_FALSE(s.all);
  EXPECT_FALSE(s.per_head);
  EXPECT_EQ(s.bytes_read, 0u);
  EXPECT_EQ(s.slots, (std::vector<int32_t>{0, 1, 2, 3, 34, 35, 36, 37, 38, 39}));
  // Default 8 sinks; a budget at or below the sinks still keeps the newest slot.
  auto d = policy_from("streaming:budget=3");
  d->select(f.query(1, 1), s);
  EXPECT_EQ(s.slots, (std::vector<int32_t>{0, 1, 39}));
  // A fraction of the context: 0.25 of 40 = 10 slots.
  auto fr = policy_from("streaming:budget=0.25,sinks=0");
  fr->select(f.query(0, 1), s);
  EXPECT_EQ(s.slots, (std::vector<int32_t>{30, 31, 32, 33, 34, 35, 36, 37, 38, 39}));
  // Budget covering the context: dense.
  auto all = policy_from("streaming:budget=40");
  all->select(f.query(0, 0), s);
  EXPECT_TRUE(s.all);
}

// Quest against a brute force: every page's box bounds every true q.k of its keys, and the pages
// read are the newest one plus the best by the max over the group's heads of those bounds, the
// last one cut to fill the budget exactly.
TEST(QuestPolicy, PageBoundsAndSelectionMatchBruteForce) {
  const int n = 45, hd = kShape.head_dim, page = 4, ng = kShape.n_group();
  Fixture f(n, 13);
  for (int budget : {13, 11, 3, 1}) {
    auto p = policy_from("quest:dense_layers=none,page=4,budget=" + std::to_string(budget));
    for (int l = 0; l < kShape.n_layers; ++l) p->on_append(f.cache, l, 0, n);
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
  Fixture f(n, 3);
  auto d = policy_from("quest:budget=5");  // page 16: the newest page holds slots 32..39
  for (int l = 0; l < kShape.n_layers; ++l) d->on_append(f.cache, l, 0, n);
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

// One decode step of `layer` through the driver with the fixture's cache and queries (the newest
// slot is the query's own). Returns [n_heads, head_dim].
std::vector<float> decode_through_driver(const Fixture& f, AttentionPolicy& p, int layer) {
  const int32_t pos = f.cache.n_used() - 1;
  std::vector<float> out(kShape.n_heads * kShape.head_dim);
  AttnStep step;
  step.layer = layer;
  step.n_tok = 1;
  step.first_slot = pos;
  step.pos = &pos;
  step.q = f.q.data();
  step.out = out.data();
  attention_forward(step, f.cache, PolicyFacets(p), nullptr);
  return out;
}

// Records the probabilities the driver hands a policy that learns from them (H2O, SnapKV), for a
// selection of every slot or of the even slots.
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
  Fixture f(n, 23);
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

// SparQ against the paper's formula computed here in double: per query head the r largest |q_c|,
// approximate logits from those key dims, the top-k of them, exact attention over those k slots,
// and alpha * that + (1 - alpha) * mean(V), alpha = the approximate softmax (temperature
// sqrt(head_dim * sum_r |q| / sum |q|)) mass on the top-k.
TEST(SparqPolicy, OutputMatchesTheMeanCorrectedFormula) {
  const int n = 24, k = 6, r = 4, hd = kShape.head_dim, ng = kShape.n_group();
  Fixture f(n, 19);
  auto on = policy_from("sparq:budget=6,r=4");
  auto off = policy_from("sparq:budget=6,r=4,mean_correction=off");
  auto pieces = policy_from("sparq:budget=6,r=4");
  for (int l = 0; l < kShape.n_layers; ++l) {
    on->on_append(f.cache, l, 0, n);
    off->on_append(f.cache, l, 0, n);
    for (auto [a, m] : {std::pair{0, 5}, {5, 1}, {6, 18}}) pieces->on_append(f.cache, l, a, m);
  }
  for (int l = 0; l < kShape.n_layers; ++l) {
    const std::vector<float> got = decode_through_driver(f, *on, l);
    const std::vector<float> got_off = decode_through_driver(f, *off, l);
    EXPECT_EQ(decode_through_driver(f, *pieces, l), got);  // the running V sum, appended in parts
    for (int h = 0; h < kShape.n_heads; ++h) {
      const int g = h / ng;
      const auto* K = static_cast<const float*>(f.cache.k_rows(l, g));  // [capacity, head_dim]
      const auto* V = static_cast<const float*>(f.cache.v_rows(l, g));
      const float* qh = f.q.data() + h * hd;
      std::vector<int> dims(hd);
      for (int c = 0; c < hd; ++c) dims[c] = c;
      std::stable_sort(dims.begin(), dims.end(),
                       [&](int a, int b) { return std::fabs(qh[a]) > std::fabs(qh[b]); });
      dims.resize(r);
      double sum_all = 0.0, sum_r = 0.0;
      for (int c = 0; c < hd; ++c) sum_all += std::fabs(qh[c]);
      for (int c : dims) sum_r += std::fabs(qh[c]);
      std::vector<double> approx(n);
      for (int t = 0; t < n; ++t) {
        approx[t] = 0.0;
        for (int c : dims) approx[t] += double(qh[c]) * K[t * hd + c];
      }
      std::vector<int> idx(n);
      for (int t = 0; t < n; ++t) idx[t] = t;
      std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return approx[a] > approx[b]; });
      idx.resize(k);
      const double temp = std::sqrt(hd * sum_r / sum_all);
      const double mx = *std::max_element(approx.begin(), approx.end());
      double z = 0.0, alpha = 0.0;
      for (int t = 0; t < n; ++t) z += std::exp((approx[t] - mx) / temp);
      for (int t : idx) alpha += std::exp((approx[t] - mx) / temp) / z;
      EXPECT_LT(alpha, 0.999);  // the correction is not vacuous
      std::vector<double> logit(k);
      double lmx = -INFINITY, lz = 0.0;
      for (int i = 0; i < k; ++i) {
        double d = 0.0;
        for (int c = 0; c < hd; ++c) d += double(qh[c]) * K[idx[i] * hd + c];
        logit[i] = d / std::sqrt(double(hd));
        lmx = std::max(lmx, logit[i]);
      }
      for (int i = 0; i < k; ++i) lz += std::exp(logit[i] - lmx);
      for (int c = 0; c < hd; ++c) {
        double y = 0.0, mean = 0.0;
        for (int i = 0; i < k; ++i) y += std::exp(logit[i] - lmx) / lz * V[idx[i] * hd + c];
        for (int t = 0; t < n; ++t) mean += V[t * hd + c] / n;
        EXPECT_NEAR(got_off[h * hd + c], y, 1e-4) << "head " << h << " dim " << c;
        EXPECT_NEAR(got[h * hd + c], alpha * y + (1.0 - alpha) * mean, 1e-4)
            << "head " << h << " dim " << c;
      }
    }
  }
  // Selections per query head; the r key dims of every slot are what it reads to choose.
  Selection s;
  on->select(f.query(1, 0), s);
  EXPECT_TRUE(s.per_head);
  EXPECT_EQ(s.bytes_read, uint64_t{2} * n * r * 4);
  EXPECT_EQ(s.mix_alpha.size(), 2u);
  off->select(f.query(1, 0), s);
  EXPECT_TRUE(s.mix_alpha.empty());
}

TEST(SparqPolicy, BadOptionsAreClearErrors) {
  expect_policy_error("sparq", "needs a budget");
  expect_policy_error("sparq:budget=8,r=0", "r must be a count");
  expect_policy_error("sparq:budget=8,r=17", "r must be a count");  // head_dim 16
  expect_policy_error("sparq:budget=8,r=2.5", "r must be a count");
  expect_policy_error("sparq:budget=8,r=x", "r must be a count");
  expect_policy_error("sparq:budget=8,mean_correction=maybe", "mean_correction must be 'on'");
  expect_policy_error("sparq:budget=8,k=4", "has no option 'k'");
  EXPECT_NO_THROW(policy_from("sparq:budget=8,r=16,mean_correction=off"));
}

// Double Sparsity against a brute force: each head's heavy channels are its calibrated top
// importances; per head the slots are the top-B of q.K over those channels, shared the top-B of
// the heads' summed softmax shares (integer data: every score exact).
TEST(DoubleSparsityPolicy, SelectionMatchesBruteForceTopK) {
  const int n = 45, k = 7, hd = kShape.head_dim, ng = kShape.n_group(), R = 5;
  Fixture f(n, 23, /*integer=*/true);
  const Calibration cal = load_calibration(ds_calib_path());
  const std::string d = "double-sparsity:calib=" + ds_calib_path() + ",dense_layers=none,budget=7";
  auto shared = policy_from(d + ",channels=5");
  auto per_head = policy_from(d + ",channels=5,gqa=per-head");
  for (int l = 0; l < kShape.n_layers; ++l) {
    shared->on_append(f.cache, l, 0, n);
    per_head->on_append(f.cache, l, 0, n);
  }
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

// FASA with a subset of FCs (n_tip = 3 of 8) against TIP + FAC written out here: each query
// head scores every slot with its 3 top-ranked FCs' dims only (FC i = RoPE plane (2i, 2i+1) of a
// NORM model), sinks and recent slots are taken first, then the top of the rest by score
// (per head) or by the group's summed softmax shares at 1/sqrt(head_dim) (shared); the output is
// exact softmax attention over those slots. Integer and Gaussian data.
TEST(FasaPolicy, SubsetOfFcsMatchesBruteForceTipAndFac) {
  const int n = 50, budget = 9, n_tip = 3, hd = kShape.head_dim, ng = kShape.n_group();
  const Calibration cal = load_calibration(calib_path());
  for (int i = 0; i < cal.n_fc(); ++i) {
    ASSERT_EQ(cal.fcs[i].a, 2 * i);
    ASSERT_EQ(cal.fcs[i].b, 2 * i + 1);
  }
  int differs_from_oracle = 0;
  for (const bool integer : {true, false}) {
    Fixture f(n, integer ? 31 : 32, integer);
    for (const char* gqa : {"shared", "per-head"}) {
      for (const auto& [sink, recent] : {std::pair{0, 0}, {2, 3}}) {
        const std::string spec =
            "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() +
            ",dense_layers=none,n_tip=3,budget=9,gqa=" + gqa + ",sink=" + std::to_string(sink) +
            ",recent=" + std::to_string(recent);
        const bool per_head = std::string(gqa) == "per-head";
        auto fasa = policy_from(spec);
        for (int l = 0; l < kShape.n_layers; ++l) fasa->on_append(f.cache, l, 0, n);
        // Forced slots first (inside the budget), then the best of the rest (ties: lower slot).
        auto pick = [&](const std::vector<double>& score) {
          std::vector<int32_t> out;
          for (int t = 0; t < std::min(sink, n); ++t) out.push_back(t);
          for (int t = std::max(n - recent, sink); t < n; ++t) out.push_back(t);
          std::vector<int32_t> rest;
          for (int t = 0; t < n; ++t) {
            if (std::find(out.begin(), out.end(), t) == out.end()) rest.push_back(t);
          }
          std::stable_sort(rest.begin(), rest.end(),
                           [&](int a, int b) { return score[a] > score[b]; });
          for (int i = 0; static_cast<int>(out.size()) < budget; ++i) out.push_back(rest[i]);
          std::sort(out.begin(), out.end());
          return out;
        };
        for (int l = 0; l < kShape.n_layers; ++l) {
          std::vector<std::vector<int32_t>> want(kShape.n_heads);  // slots per query head
          for (int g = 0; g < kShape.n_kv_heads; ++g) {
            const auto* K = static_cast<const float*>(f.cache.k_rows(l, g));  // [cap, head_dim]
            std::vector<double> mass(n, 0.0);
            for (int j = 0; j < ng; ++j) {
              const int h = g * ng + j;
              const float* qh = f.q.data() + h * hd;
              std::vector<double> tip(n, 0.0), full(n, 0.0);
              for (int t = 0; t < n; ++t) {
                for (int i = 0; i < n_tip; ++i) {
                  const int fc = cal.rank(l, h)[i];
                  for (int d : {2 * fc, 2 * fc + 1}) tip[t] += double(qh[d]) * K[t * hd + d];
                }
                for (int d = 0; d < hd; ++d) full[t] += double(qh[d]) * K[t * hd + d];
              }
              want[h] = pick(tip);
              differs_from_oracle += want[h] != pick(full);
              const double mx = *std::max_element(tip.begin(), tip.end());
              double z = 0.0;
              for (double x : tip) z += std::exp((x - mx) / std::sqrt(double(hd)));
              for (int t = 0; t < n; ++t)
                mass[t] += std::exp((tip[t] - mx) / std::sqrt(double(hd))) / z;
            }
            if (!per_head) {
              const std::vector<int32_t> shared = pick(mass);
              for (int j = 0; j < ng; ++j) want[g * ng + j] = shared;
            }
            Selection sel;
            fasa->select(f.query(l, g), sel);
            ASSERT_FALSE(sel.all);
            ASSERT_EQ(sel.per_head, per_head);
            for (int j = 0; j < ng; ++j) {
              EXPECT_EQ(sel.slots_for(j), want[g * ng + j])
                  << spec << " layer " << l << " head " << g * ng + j;
            }
          }
          // FAC: exact softmax attention of the full query over the reference's slots.
          const std::vector<float> got = decode_through_driver(f, *fasa, l);
          for (int h = 0; h < kShape.n_heads; ++h) {
            const int g = h / ng;
            const auto* K = static_cast<const float*>(f.cache.k_rows(l, g));
            const auto* V = static_cast<const float*>(f.cache.v_rows(l, g));
            std::vector<double> w;
            for (int32_t t : want[h]) {
              double d = 0.0;
              for (int c = 0; c < hd; ++c) d += double(f.q[h * hd + c]) * K[t * hd + c];
              w.push_back(d / std::sqrt(double(hd)));
            }
            const double mx = *std::max_element(w.begin(), w.end());
            double z = 0.0;
            for (double& x : w) z += (x = std::exp(x - mx));
            for (int c = 0; c < hd; ++c) {
              double y = 0.0;
              for (size_t i = 0; i < w.size(); ++i) y += w[i] / z * V[want[h][i] * hd + c];
              EXPECT_NEAR(got[h * hd + c], y, 1e-4 * std::max(1.0, std::fabs(y)))
                  << spec << " layer " << l << " head " << h << " dim " << c;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(differs_from_oracle, 0);  // 3 FCs of 8 are not the full logits
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
