#include "attention/policies/policy_fixture.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "fasa/attention/attention.h"
#include "fasa/attention/calibration.h"
#include "fasa/core/error.h"
#include "support/random_calibration.h"

namespace fasa::test {

RandomCache::RandomCache(int n, uint32_t seed, bool integer)
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

AttnQuery RandomCache::query(int layer, int kv_head) const {
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

void RandomCache::show(AttentionPolicy& p) const {
  for (int l = 0; l < kShape.n_layers; ++l) p.on_append(cache, l, 0, cache.n_used());
}

PolicyContext test_context(const std::string& sha) {
  PolicyContext ctx;
  ctx.shape = kShape;
  ctx.arch = "llama";
  ctx.rope_dim = kShape.head_dim;
  ctx.model_sha256 = [sha] { return sha; };
  return ctx;
}

const std::string& calib_path() {
  static const std::string path =
      write_random_calibration(kShape, "tiny-test-model", "policy_test_calib");
  return path;
}

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

std::unique_ptr<AttentionPolicy> policy_from(const std::string& spec, const PolicyContext& ctx) {
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  return make_policy(name, ctx, opts);
}

void expect_policy_error(const std::string& spec, const std::string& what,
                         const PolicyContext& ctx) {
  try {
    policy_from(spec, ctx);
    ADD_FAILURE() << spec << " was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << spec << ": " << e.what();
  }
}

void expect_layer_equals_groups(AttentionPolicy& p, const RandomCache& c, int layer,
                                const std::string& spec) {
  std::vector<AttnQuery> qs;
  for (int g = 0; g < kShape.n_kv_heads; ++g) qs.push_back(c.query(layer, g));
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

std::vector<float> decode_through_driver(const RandomCache& c, AttentionPolicy& p, int layer) {
  const int32_t pos = c.cache.n_used() - 1;
  std::vector<float> out(kShape.n_heads * kShape.head_dim);
  AttnStep step;
  step.layer = layer;
  step.n_tok = 1;
  step.first_slot = pos;
  step.pos = &pos;
  step.q = c.q.data();
  step.out = out.data();
  attention_forward(step, c.cache, PolicyFacets(p), nullptr);
  return out;
}

}  // namespace fasa::test
