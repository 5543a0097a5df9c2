// FASA's selector variants (issue 23): compound CA sets, one FC set per kv-head group, SparQ-style
// mean-value correction, per-layer budgets and method=paper, each against what it must do.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "fasa/attention/attention.h"
#include "fasa/attention/calibration.h"
#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policies/channel_subset.h"
#include "fasa/attention/policy.h"
#include "fasa/core/error.h"

namespace fasa {
namespace {

const AttnShape kShape{3, 4, 2, 16, {}};  // n_layers, n_heads, n_kv_heads, head_dim
constexpr int kFc = 8;

// n random tokens in every layer and kv head, one random query per head.
struct Fixture {
  KvCache cache;
  std::vector<float> q;  // [n_heads, head_dim]
  explicit Fixture(int n, uint32_t seed = 1) : cache(kShape, KvType::F32, std::max(64, n)) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> k(kShape.head_dim), v(kShape.head_dim);
    std::vector<int32_t> pos(n);
    for (int t = 0; t < n; ++t) {
      pos[t] = t;
      for (int l = 0; l < kShape.n_layers; ++l) {
        for (int g = 0; g < kShape.n_kv_heads; ++g) {
          for (auto& x : k) x = normal(rng);
          for (auto& x : v) x = normal(rng);
          cache.store(l, g, t, k.data(), v.data());
        }
      }
    }
    cache.commit(n, pos.data());
    q.resize(kShape.n_heads * kShape.head_dim);
    for (auto& x : q) x = 2.0f * normal(rng);
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

PolicyContext context() {
  PolicyContext ctx;
  ctx.shape = kShape;
  ctx.arch = "llama";
  ctx.rope_dim = kShape.head_dim;
  ctx.model_sha256 = [] { return std::string("selector-test-model"); };
  return ctx;
}

// A version 4 calibration for kShape: random agreements and channel importance, and random
// compound sets of 4 FCs whose agreement differs by layer (layer 2 agrees least).
Calibration synthetic() {
  Calibration c;
  c.model_sha256 = "selector-test-model";
  c.arch = "llama";
  c.n_layers = kShape.n_layers;
  c.n_heads = kShape.n_heads;
  c.n_kv_heads = kShape.n_kv_heads;
  c.head_dim = kShape.head_dim;
  c.fcs = fc_dims(RopeLayout::Norm, FcLayout::Rope, kShape.head_dim, kShape.head_dim);
  c.layers = {0, 1, 2};
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  c.mean_ca.resize(size_t(c.n_layers) * c.n_heads * kFc);
  for (auto& x : c.mean_ca) x = u(rng);
  c.channel_importance.resize(size_t(c.n_layers) * c.n_heads * c.head_dim);
  for (auto& x : c.channel_importance) x = u(rng);
  c.n_compound = 4;
  auto sets = [&](size_t rows, std::vector<int32_t>& fcs, std::vector<float>& ca, int per_layer) {
    for (size_t r = 0; r < rows; ++r) {
      std::vector<int32_t> perm(kFc);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      const int layer = static_cast<int>(r) / per_layer;
      for (int s = 0; s < c.n_compound; ++s) {
        fcs.push_back(perm[s]);
        ca.push_back(0.2f + 0.15f * s + 0.1f * static_cast<float>(2 - layer));
      }
    }
  };
  sets(size_t(c.n_layers) * c.n_heads, c.compound, c.compound_ca, c.n_heads);
  sets(size_t(c.n_layers) * c.n_kv_heads, c.group_compound, c.group_compound_ca, c.n_kv_heads);
  c.rank_all();
  return c;
}

std::string save(const Calibration& c, const std::string& name) {
  const std::string p =
      ::testing::TempDir() + "/" + name + "_" + std::to_string(getpid()) + ".json";
  save_calibration(c, p);
  return p;
}

const std::string& calib() {
  static const std::string path = save(synthetic(), "selector_calib");
  return path;
}

std::unique_ptr<AttentionPolicy> policy(const std::string& opts) {
  std::string name;
  PolicyOptions o;
  parse_policy_spec("fasa:calib=" + calib() + ",dense_layers=none," + opts, &name, &o);
  return make_policy(name, context(), o);
}

std::string error_of(const std::string& spec) {
  try {
    std::string name;
    PolicyOptions o;
    parse_policy_spec(spec, &name, &o);
    make_policy(name, context(), o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

void append_all(AttentionPolicy& p, const Fixture& f) {
  for (int l = 0; l < kShape.n_layers; ++l) p.on_append(f.cache, l, 0, f.cache.n_used());
}

// fcs=compound scores each head with its calibrated compound set: the same selections as a
// calibration whose mean CA ranks those FCs first, in that order.
TEST(FasaSelector, CompoundUsesTheCalibratedGreedySets) {
  const int n = 40;
  Fixture f(n, 3);
  Calibration as_ca = synthetic();
  for (int l : as_ca.layers) {
    for (int h = 0; h < as_ca.n_heads; ++h) {
      float* ca = as_ca.mean_ca.data() + (size_t(l) * as_ca.n_heads + h) * kFc;
      std::fill(ca, ca + kFc, 0.0f);
      for (int s = 0; s < as_ca.n_compound; ++s) ca[as_ca.compound_fcs(l, h)[s]] = 1.0f - 0.1f * s;
    }
  }
  as_ca.rank_all();
  const std::string path = save(as_ca, "selector_as_ca");
  for (const char* n_tip : {"2", "4"}) {
    auto compound = policy(std::string("budget=7,fc_sets=head,fcs=compound,n_tip=") + n_tip);
    std::string name;
    PolicyOptions o;
    parse_policy_spec("fasa:calib=" + path + ",fcs=calibrated,fc_sets=head,dense_layers=none," +
                          "budget=7,n_tip=" + n_tip,
                      &name, &o);
    auto same = make_policy(name, context(), o);
    auto by_ca = policy(std::string("budget=7,fcs=calibrated,fc_sets=head,n_tip=") + n_tip);
    for (auto* p : {compound.get(), same.get(), by_ca.get()}) append_all(*p, f);
    int differ = 0;
    for (int l = 0; l < kShape.n_layers; ++l) {
      for (int g = 0; g < kShape.n_kv_heads; ++g) {
        Selection a, b, c;
        compound->select(f.query(l, g), a);
        same->select(f.query(l, g), b);
        by_ca->select(f.query(l, g), c);
        EXPECT_EQ(a.slots, b.slots) << l << " " << g;
        differ += a.slots != c.slots;
      }
    }
    EXPECT_GT(differ, 0);
  }
}

// fc_sets=group: the packed slice is n_tip FCs per kv head (2 * n_tip dims), where per-head
// sets read their union; the group's set is the best FCs by the heads' mean CA.
TEST(FasaSelector, GroupSetsPackNtipFcsPerKvHead) {
  const int n = 40;
  Fixture f(n, 4);
  Calibration mean_of_group = synthetic();
  const int ng = kShape.n_group();
  for (int l : mean_of_group.layers) {
    for (int g = 0; g < kShape.n_kv_heads; ++g) {
      std::vector<float> mean(kFc, 0.0f);
      for (int h = g * ng; h < (g + 1) * ng; ++h) {
        for (int fc = 0; fc < kFc; ++fc) mean[fc] += mean_of_group.ca(l, h)[fc] / ng;
      }
      for (int h = g * ng; h < (g + 1) * ng; ++h) {
        std::copy(mean.begin(), mean.end(),
                  mean_of_group.mean_ca.begin() + (size_t(l) * kShape.n_heads + h) * kFc);
      }
    }
  }
  mean_of_group.rank_all();
  const std::string path = save(mean_of_group, "selector_group_mean");
  for (const char* fcs : {"calibrated", "mass", "compound"}) {
    auto group = policy(std::string("budget=7,n_tip=3,fc_sets=group,fcs=") + fcs);
    auto head = policy(std::string("budget=7,n_tip=3,fc_sets=head,fcs=") + fcs);
    append_all(*group, f);
    append_all(*head, f);
    int wider = 0;
    for (int l = 0; l < kShape.n_layers; ++l) {
      for (int g = 0; g < kShape.n_kv_heads; ++g) {
        Selection a, b;
        group->select(f.query(l, g), a);
        head->select(f.query(l, g), b);
        ASSERT_FALSE(a.all);
        EXPECT_EQ(a.bytes_read, uint64_t{n} * 2 * 3 * sizeof(float)) << fcs;  // 3 FCs, f32
        EXPECT_GE(b.bytes_read, a.bytes_read) << fcs;  // the union of two heads' sets
        wider += b.bytes_read > a.bytes_read;
      }
    }
    EXPECT_GT(wider, 0) << fcs;
    EXPECT_LT(group->resident_bytes(), head->resident_bytes());
  }
  std::string name;
  PolicyOptions o;
  parse_policy_spec("fasa:calib=" + path + ",dense_layers=none,budget=7,n_tip=3", &name, &o);
  auto same = make_policy(name, context(), o);
  auto group = policy("budget=7,n_tip=3,fc_sets=group");
  append_all(*same, f);
  append_all(*group, f);
  for (int l = 0; l < kShape.n_layers; ++l) {
    for (int g = 0; g < kShape.n_kv_heads; ++g) {
      Selection a, b;
      group->select(f.query(l, g), a);
      same->select(f.query(l, g), b);
      EXPECT_EQ(a.slots, b.slots);
      EXPECT_EQ(a.bytes_read, b.bytes_read);
    }
  }
}

// mean_value=on: alpha per head = the selected slots' share of softmax(TIP scores / T), T =
// sqrt(head_dim * sum over the head's scoring dims of |q| / sum of |q|), and the driver's output
// alpha * attn + (1 - alpha) * mean(V), computed here in double. The slots are mean_value=off's.
TEST(FasaSelector, MeanValueFollowsTheSparqFormula) {
  const int n = 30, hd = kShape.head_dim, ng = kShape.n_group(), n_tip = 2;
  Fixture f(n, 5);
  const Calibration c = synthetic();
  for (const char* gqa : {"shared", "per-head"}) {
    const std::string o =
        std::string("budget=6,n_tip=2,fcs=calibrated,fc_sets=head,break_even=off,gqa=") + gqa;
    auto on = policy(o + ",mean_value=on");
    auto off = policy(o + ",mean_value=off");
    append_all(*on, f);
    append_all(*off, f);
    for (int l = 0; l < kShape.n_layers; ++l) {
      std::vector<float> out(kShape.n_heads * hd), out_off(kShape.n_heads * hd);
      const int32_t pos = n - 1;
      for (auto [p, dst] : {std::pair{on.get(), &out}, {off.get(), &out_off}}) {
        AttnStep step;
        step.layer = l;
        step.n_tok = 1;
        step.first_slot = pos;
        step.pos = &pos;
        step.q = f.q.data();
        step.out = dst->data();
        attention_forward(step, f.cache, PolicyFacets(*p), nullptr);
      }
      for (int g = 0; g < kShape.n_kv_heads; ++g) {
        Selection a, b;
        on->select(f.query(l, g), a);
        off->select(f.query(l, g), b);
        EXPECT_EQ(a.slots, b.slots);
        EXPECT_EQ(a.head_slots, b.head_slots);
        ASSERT_EQ(a.mix_alpha.size(), size_t(ng));
        EXPECT_TRUE(b.mix_alpha.empty());
        const auto* K = static_cast<const float*>(f.cache.k_rows(l, g));  // [cap, hd]
        const auto* V = static_cast<const float*>(f.cache.v_rows(l, g));
        for (int j = 0; j < ng; ++j) {
          const int h = g * ng + j;
          const float* qh = f.q.data() + h * hd;
          std::vector<int> dims;
          for (int s = 0; s < n_tip; ++s) {
            dims.push_back(c.fcs[c.rank(l, h)[s]].a);
            dims.push_back(c.fcs[c.rank(l, h)[s]].b);
          }
          double sum_all = 0.0, sum_sub = 0.0;
          for (int d = 0; d < hd; ++d) sum_all += std::fabs(qh[d]);
          for (int d : dims) sum_sub += std::fabs(qh[d]);
          const double temp = std::sqrt(hd * sum_sub / sum_all);
          std::vector<double> s(n);
          for (int t = 0; t < n; ++t) {
            s[t] = 0.0;
            for (int d : dims) s[t] += double(qh[d]) * K[t * hd + d];
          }
          const double mx = *std::max_element(s.begin(), s.end());
          double z = 0.0, alpha = 0.0;
          for (int t = 0; t < n; ++t) z += std::exp((s[t] - mx) / temp);
          const auto& slots = a.slots_for(j);
          for (int32_t t : slots) alpha += std::exp((s[t] - mx) / temp) / z;
          EXPECT_NEAR(a.mix_alpha[j], alpha, 1e-5) << gqa << " layer " << l << " head " << h;
          EXPECT_LT(alpha, 0.999);  // not vacuous
          for (int d = 0; d < hd; ++d) {
            double mean = 0.0;
            for (int t = 0; t < n; ++t) mean += V[t * hd + d] / n;
            EXPECT_NEAR(a.mix_value[d], mean, 1e-5);
            const double want = alpha * out_off[h * hd + d] + (1.0 - alpha) * mean;
            EXPECT_NEAR(out[h * hd + d], want, 1e-4) << gqa << " head " << h << " dim " << d;
          }
        }
      }
    }
  }
  EXPECT_GT(policy("budget=6,mean_value=on")->resident_bytes(),
            policy("budget=6,mean_value=off")->resident_bytes());
}

// layer_budget=calibrated: layers that agree less get more, the selecting layers' budgets sum to
// their count x B (largest remainder), and a dense layer takes no share.
TEST(FasaSelector, CalibratedLayerBudgetsKeepTheTotal) {
  const int n = 60;
  Fixture f(n, 6);
  for (const char* dense : {"none", "0"}) {
    for (int b : {5, 8, 13}) {
      std::string name;
      PolicyOptions o;
      parse_policy_spec("fasa:calib=" + calib() + ",n_tip=2,break_even=off,layer_budget=" +
                            "calibrated,dense_layers=" + dense + ",budget=" + std::to_string(b),
                        &name, &o);
      auto p = make_policy(name, context(), o);
      append_all(*p, f);
      int total = 0, selecting = 0;
      std::vector<int> per_layer;
      for (int l = 0; l < kShape.n_layers; ++l) {
        Selection s;
        p->select(f.query(l, 0), s);
        if (s.all) {
          per_layer.push_back(-1);
          continue;
        }
        per_layer.push_back(static_cast<int>(s.slots.size()));
        total += per_layer.back();
        selecting += 1;
      }
      EXPECT_EQ(selecting, std::string(dense) == "none" ? 3 : 2);
      EXPECT_EQ(total, selecting * b) << dense << " " << b;
      EXPECT_LE(per_layer[1], per_layer[2]) << b;  // layer 2 agrees least (synthetic())
      if (b == 13) {
        EXPECT_LT(per_layer[1], per_layer[2]);
      }
    }
  }
  // The apportioning itself.
  ChannelSubsetOptions o;
  o.budget = 10;
  o.layer_weight = {0.0, 0.55, 1.2, 1.25};  // layer 0 dense: no share
  EXPECT_EQ(layer_budget(o, 0, 100), 10);
  EXPECT_EQ(layer_budget(o, 1, 100) + layer_budget(o, 2, 100) + layer_budget(o, 3, 100), 30);
  EXPECT_EQ(layer_budget(o, 1, 100), 6);  // 5.5 and 12.5 tie on .5: the lower layer first
  EXPECT_EQ(layer_budget(o, 2, 100), 12);
  EXPECT_EQ(layer_budget(o, 3, 100), 12);
  o.layer_weight.clear();
  EXPECT_EQ(layer_budget(o, 2, 100), 10);
}

// method=paper is the selector of the defaults before issue 23 (fcs=calibrated, fc_sets=head,
// mean_value=off), and refuses options that would change it.
TEST(FasaSelector, PaperMethodFixesThePapersSelector) {
  const int n = 40;
  Fixture f(n, 7);
  auto paper = policy("budget=7,method=paper");
  auto plain = policy("budget=7,fcs=calibrated,fc_sets=head,mean_value=off");
  append_all(*paper, f);
  append_all(*plain, f);
  for (int l = 0; l < kShape.n_layers; ++l) {
    for (int g = 0; g < kShape.n_kv_heads; ++g) {
      Selection a, b;
      paper->select(f.query(l, g), a);
      plain->select(f.query(l, g), b);
      EXPECT_EQ(a.slots, b.slots);
      EXPECT_EQ(a.bytes_read, b.bytes_read);
    }
  }
  const std::string c = "fasa:calib=" + calib() + ",budget=7,method=paper";
  EXPECT_NE(error_of(c + ",fcs=compound")
                .find("method=paper fixes fcs=calibrated (got "
                      "fcs=compound)"),
            std::string::npos)
      << error_of(c + ",fcs=compound");
  for (const char* bad :
       {",fc_sets=group", ",layer_budget=calibrated", ",sink=4", ",recent=2", ",mean_value=on"}) {
    EXPECT_NE(error_of(c + bad).find("method=paper fixes"), std::string::npos) << bad;
  }
  EXPECT_EQ(error_of(c + ",sink=0,fcs=calibrated,gqa=per-head"), "(accepted)");
}

// The default selector (issue 23) is fcs=compound, fc_sets=group, mean_value=on for variant c;
// variant m keeps V in its file tier, so its default is mean_value=off.
TEST(FasaSelector, TheDefaultIsCompoundGroupSetsAndMeanValue) {
  const int n = 40;
  Fixture f(n, 8);
  auto dflt = policy("budget=7,n_tip=2");
  auto spelled = policy("budget=7,n_tip=2,fcs=compound,fc_sets=group,mean_value=on");
  auto paper = policy("budget=7,n_tip=2,method=paper");
  append_all(*dflt, f);
  append_all(*spelled, f);
  append_all(*paper, f);
  int differ = 0;
  for (int l = 0; l < kShape.n_layers; ++l) {
    for (int g = 0; g < kShape.n_kv_heads; ++g) {
      Selection a, b, c;
      dflt->select(f.query(l, g), a);
      spelled->select(f.query(l, g), b);
      paper->select(f.query(l, g), c);
      EXPECT_EQ(a.slots, b.slots);
      EXPECT_EQ(a.bytes_read, b.bytes_read);
      EXPECT_EQ(a.mix_alpha, b.mix_alpha);
      EXPECT_FALSE(a.mix_alpha.empty());  // mean_value=on
      EXPECT_TRUE(c.mix_alpha.empty());
      differ += a.slots != c.slots || a.bytes_read != c.bytes_read;
    }
  }
  EXPECT_GT(differ, 0);
  EXPECT_EQ(dflt->resident_bytes(), spelled->resident_bytes());
  const std::string m = "fasa:calib=" + calib() + ",budget=7,variant=m";
  EXPECT_EQ(error_of(m), "(accepted)");  // no mean_value=on refusal by default
  EXPECT_NE(error_of(m + ",mean_value=on").find("mean_value=on applies to variant c"),
            std::string::npos);
}

TEST(FasaSelector, BadOptionsAreClearErrors) {
  const std::string c = "fasa:calib=" + calib() + ",budget=7";
  EXPECT_NE(error_of(c + ",fc_sets=kv").find("fc_sets must be 'group' or 'head'"),
            std::string::npos)
      << error_of(c + ",fc_sets=kv");
  EXPECT_NE(error_of(c + ",mean_value=yes").find("mean_value must be 'on' or 'off'"),
            std::string::npos);
  EXPECT_NE(error_of(c + ",layer_budget=pyramid").find("layer_budget must be"), std::string::npos);
  EXPECT_NE(error_of(c + ",method=exact").find("method must be 'default' or 'paper'"),
            std::string::npos);
  EXPECT_NE(error_of(c + ",mean_value=on,variant=m").find("mean_value=on applies to variant c"),
            std::string::npos);
  EXPECT_NE(error_of("pyramidkv+fasa:calib=" + calib() + ",budget=5,keep=12,mean_value=on")
                .find("has no option 'mean_value'"),
            std::string::npos);
  EXPECT_EQ(error_of("pyramidkv+fasa:calib=" + calib() +
                     ",budget=5,keep=12,fc_sets=group,fcs=compound,layer_budget=calibrated"),
            "(accepted)");
}

}  // namespace
}  // namespace fasa
