// `fasa` (policies/fasa.cpp, channel_subset.cpp): its selection against TIP + FAC written out
// here and against the oracle, the staged long-context path, FASA-M against FASA-C, hybrid
// stacks, the break-even, mass-ranked FCs, dense layers, sinks and recent slots, and the
// calibration's checks.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "attention/policies/policy_fixture.h"
#include "fasa/attention/calibration.h"
#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policy.h"
#include "fasa/core/error.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/tiny_calibration.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

using test::calib_path;
using test::decode_through_driver;
using test::ds_calib_path;
using test::expect_layer_equals_groups;
using test::kShape;
using test::policy_from;
using test::RandomCache;
using test::test_context;

// Long contexts take FASA's staged path (TIP in slot-range jobs across kv heads): the whole
// layer at once still equals group by group, shared and per head.
TEST(FasaPolicy, StagedLayerSelectionEqualsGroupByGroup) {
  const int n = 5000;
  RandomCache f(n, 9);
  const std::string c =
      "fasa:fcs=calibrated,fc_sets=head,calib=" + calib_path() + ",dense_layers=none,budget=";
  for (const std::string& spec :
       {c + "300,mean_value=off", c + "0.05,gqa=per-head,sink=4,recent=8,mean_value=off",
        c + "300,mean_value=on", c + "0.05,gqa=per-head,sink=4,recent=8,mean_value=on"}) {
    auto p = policy_from(spec);
    f.show(*p);
    for (int l = 0; l < kShape.n_layers; ++l) {
      Selection a;
      p->select(f.query(l, 0), a);
      ASSERT_FALSE(a.all) << spec;  // really the staged path, not dense
      expect_layer_equals_groups(*p, f, l, spec);
    }
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

// Break-even: FASA selects only while its packed slice plus the selected rows read less than
// 0.8 of dense attention's K/V bytes; otherwise it attends densely and flags it.
TEST(FasaPolicy, AttendsDenselyBelowItsBreakEven) {
  const int n = 45;
  RandomCache f(n, 12, /*integer=*/true);
  const std::string c = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() +
                        ",dense_layers=none";
  auto run = [&](const std::string& spec, int* fallbacks) {
    auto p = policy_from(c + "," + spec);
    f.show(*p);
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
  RandomCache f(n, 11, /*integer=*/true);
  // break_even=off: with every FC the slice is the whole K, which never pays (next test).
  const std::string c = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() +
                        ",dense_layers=none,n_tip=8,break_even=off";
  for (const char* gqa : {"shared", "per-head"}) {
    auto fasa = policy_from(c + ",budget=7,gqa=" + gqa);
    auto oracle = policy_from(std::string("oracle:budget=7,gqa=") + gqa);
    f.show(*fasa);
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
  f.show(*one);
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
  RandomCache f(n, 12);
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
    f.show(*p);
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
  RandomCache f(n, 5);
  auto p = policy_from("fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() +
                       ",budget=8,sink=2,recent=3");
  f.show(*p);
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
    RandomCache f(n, integer ? 31 : 32, integer);
    for (const char* gqa : {"shared", "per-head"}) {
      for (const auto& [sink, recent] : {std::pair{0, 0}, {2, 3}}) {
        const std::string spec =
            "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path() +
            ",dense_layers=none,n_tip=3,budget=9,gqa=" + gqa + ",sink=" + std::to_string(sink) +
            ",recent=" + std::to_string(recent);
        const bool per_head = std::string(gqa) == "per-head";
        auto fasa = policy_from(spec);
        f.show(*fasa);
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

}  // namespace
}  // namespace fasa
