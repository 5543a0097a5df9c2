// The attention-probability-driven eviction policies (snapkv, pyramidkv, h2o) against
// brute-force references computed here, prefix forking, and their bad options.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

#include "fasa/attention/calibration.h"
#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policies/snapkv.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/attention/prefill_observers.h"
#include "fasa/calibrate/calibrator.h"
#include "fasa/core/error.h"
#include "fasa/engine/session.h"
#include "fasa/eval/perplexity.h"
#include "fasa/model/model.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

const AttnShape kShape{2, 4, 2, 16, {}};  // n_layers, n_heads, n_kv_heads, head_dim
constexpr int kHd = 16, kGroup = 2;

// n random tokens (f32) and random queries for every one of them: q[t] is token t's
// [n_heads, head_dim] query, as prefill and decode would pass them.
struct Data {
  KvCache cache;
  std::vector<float> q;  // [n, n_heads, head_dim]
  explicit Data(int n, uint32_t seed = 3) : cache(kShape, KvType::F32, std::max(64, n)) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> k(kHd), v(kHd);
    std::vector<int32_t> pos(n);
    std::iota(pos.begin(), pos.end(), 0);
    for (int t = 0; t < n; ++t) {
      for (int l = 0; l < kShape.n_layers; ++l) {
        for (int g = 0; g < kShape.n_kv_heads; ++g) {
          for (auto& x : k) x = normal(rng);
          for (auto& x : v) x = normal(rng);
          cache.store(l, g, t, k.data(), v.data());
        }
      }
    }
    cache.commit(n, pos.data());
    q.resize(static_cast<size_t>(n) * kShape.n_heads * kHd);
    for (auto& x : q) x = 2.0f * normal(rng);
  }
  const float* q_of(int t, int head) const {
    return q.data() + (static_cast<size_t>(t) * kShape.n_heads + head) * kHd;
  }
  // The decode step of token n_visible - 1.
  AttnQuery step(int layer, int kv_head, int n_visible) const {
    AttnQuery a;
    a.layer = layer;
    a.kv_head = kv_head;
    a.q = q_of(n_visible - 1, kv_head * kGroup);
    a.n_group = kGroup;
    a.pos = n_visible - 1;
    a.n_visible = n_visible;
    a.cache = &cache;
    return a;
  }
  // Feeds tokens [0, n_prompt) as prefill chunks of `chunk` to every layer.
  void prefill(AttentionPolicy& p, int n_prompt, int chunk) const {
    PrefillObserver* o = facet<PrefillObserver>(p);
    for (int t0 = 0; t0 < n_prompt; t0 += chunk) {
      const int m = std::min(chunk, n_prompt - t0);
      for (int l = 0; l < kShape.n_layers; ++l) {
        p.on_append(cache, l, t0, m);
        if (o) o->on_prefill_queries(cache, l, t0, m, q_of(t0, 0));
      }
    }
  }
  // Softmax probabilities (double) of head's query of token t over `keys` (slots).
  std::vector<double> probs(int layer, int head, int t, const std::vector<int32_t>& keys) const {
    const auto* K = static_cast<const float*>(cache.k_rows(layer, head / kGroup));
    std::vector<double> p(keys.size());
    double mx = -INFINITY;
    for (size_t j = 0; j < keys.size(); ++j) {
      double d = 0.0;
      for (int i = 0; i < kHd; ++i) {
        d += static_cast<double>(q_of(t, head)[i]) * K[keys[j] * kHd + i];
      }
      p[j] = d / std::sqrt(static_cast<double>(kHd));
      mx = std::max(mx, p[j]);
    }
    double z = 0.0;
    for (double& x : p) z += (x = std::exp(x - mx));
    for (double& x : p) x /= z;
    return p;
  }
};

std::unique_ptr<AttentionPolicy> policy_from(const std::string& spec,
                                             const AttnShape& shape = kShape) {
  PolicyContext ctx;
  ctx.shape = shape;
  ctx.arch = "llama";
  ctx.rope_dim = shape.head_dim;
  ctx.model_sha256 = [] { return std::string("tiny"); };
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  return make_policy(name, ctx, opts);
}

// Indices of the `keep` largest scores (ties: the lower index), ascending; *margin = the gap
// between the last one kept and the first one left out (infinite when nothing is left out).
std::vector<int> top_of(const std::vector<double>& s, int keep, double* margin) {
  std::vector<int> idx(s.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return s[a] > s[b]; });
  keep = std::min<int>(keep, s.size());
  *margin = keep < static_cast<int>(s.size()) ? s[idx[keep - 1]] - s[idx[keep]] : INFINITY;
  std::vector<int> out(idx.begin(), idx.begin() + keep);
  std::sort(out.begin(), out.end());
  return out;
}

// SnapKV's vote, brute force: the window's queries (tokens [s_w, s_w + w)) attend causally over
// `alive` (ascending, the slots they may see); votes at the alive slots older than s_w, max-pooled
// over that list. Returns the kept slots per list (one shared list, or one per head), or an
// empty result when a near-tie makes the float answer ambiguous.
std::vector<std::vector<int32_t>> snap_reference(const Data& d, int layer, int kv, int s_w, int w,
                                                 const std::vector<int32_t>& alive, int kernel,
                                                 int keep, bool per_head, bool* clear) {
  const int n_cand =
      static_cast<int>(std::lower_bound(alive.begin(), alive.end(), s_w) - alive.begin());
  std::vector<double> total(n_cand, 0.0);
  std::vector<std::vector<int32_t>> out;
  *clear = true;
  for (int j = 0; j < kGroup; ++j) {
    std::vector<double> votes(n_cand, 0.0);
    for (int t = s_w; t < s_w + w; ++t) {
      std::vector<int32_t> seen;
      for (int32_t s : alive) {
        if (s <= t) seen.push_back(s);
      }
      const std::vector<double> p = d.probs(layer, kv * kGroup + j, t, seen);
      for (int c = 0; c < n_cand; ++c) votes[c] += p[c];
    }
    std::vector<double> pooled(n_cand);
    for (int c = 0; c < n_cand; ++c) {
      pooled[c] = votes[c];
      for (int e = std::max(0, c - kernel / 2); e <= std::min(n_cand - 1, c + kernel / 2); ++e) {
        pooled[c] = std::max(pooled[c], votes[e]);
      }
      total[c] += pooled[c];
    }
    if (per_head) {
      double margin = 0.0;
      std::vector<int32_t> slots;
      for (int c : top_of(pooled, keep, &margin)) slots.push_back(alive[c]);
      out.push_back(slots);
      *clear = *clear && (margin == 0.0 || margin > 1e-5);  // exact ties: pooled copies
    }
  }
  if (!per_head) {
    double margin = 0.0;
    std::vector<int32_t> slots;
    for (int c : top_of(total, keep, &margin)) slots.push_back(alive[c]);
    out.push_back(slots);
    *clear = margin == 0.0 || margin > 1e-5;
  }
  return out;
}

std::vector<int32_t> with_range(std::vector<int32_t> v, int lo, int hi) {
  for (int s = lo; s < hi; ++s) v.push_back(s);
  return v;
}

// The first decode step after a 39-token prompt keeps the top B - 1 - window voted slots of the
// prompt before the window, the window and the current token; the next step slides the recent
// part by one; recompress=1 re-votes over the kept slots with the newest window (the decode
// query included) and never brings an evicted slot back.
TEST(SnapKvPolicy, KeepsTheVotedSlotsTheWindowAndTheCurrentToken) {
  const int P = 39, W = 8, B = 20, K = 3;
  Data d(P + 3);
  int checked = 0;
  for (const char* gqa : {"shared", "per-head"}) {
    const bool per_head = std::string(gqa) == "per-head";
    for (int recompress : {0, 1}) {
      auto p = policy_from("snapkv:budget=20,window=8,kernel=3,gqa=" + std::string(gqa) +
                           ",recompress=" + std::to_string(recompress));
      d.prefill(*p, P, 16);  // chunks of 16, 16 and 7
      for (int l = 0; l < kShape.n_layers; ++l) {
        for (int g = 0; g < kShape.n_kv_heads; ++g) {
          Selection s1;
          p->select(d.step(l, g, P + 1), s1);
          ASSERT_FALSE(s1.all);
          ASSERT_EQ(s1.per_head, per_head);
          std::vector<int32_t> prompt(P);
          std::iota(prompt.begin(), prompt.end(), 0);
          bool clear = false;
          const auto want =
              snap_reference(d, l, g, P - W, W, prompt, K, B - 1 - W, per_head, &clear);
          for (size_t j = 0; j < want.size(); ++j) {
            const auto& got = s1.slots_for(static_cast<int>(j));
            EXPECT_EQ(got.size(), static_cast<size_t>(B));
            if (clear) {
              EXPECT_EQ(got, with_range(want[j], P - W, P + 1)) << gqa << " layer " << l;
            }
          }
          checked += clear;
          // The next step: the recent part slides (slot P - W leaves), or a new vote.
          Selection s2;
          p->select(d.step(l, g, P + 2), s2);
          for (size_t j = 0; j < want.size(); ++j) {
            const auto& a = s1.slots_for(static_cast<int>(j));
            const auto& b = s2.slots_for(static_cast<int>(j));
            EXPECT_EQ(b.size(), static_cast<size_t>(B));
            for (int32_t s : b) {  // nothing evicted comes back
              EXPECT_TRUE(s == P + 1 || std::binary_search(a.begin(), a.end(), s)) << s;
            }
            if (recompress == 0) {
              std::vector<int32_t> voted(a.begin(), a.begin() + (B - 1 - W));
              EXPECT_EQ(b, with_range(voted, P - W + 1, P + 2));
            } else {
              // Window: tokens P - W + 1 .. P (the last query is the decode step's); candidates:
              // the slots kept before, older than the window.
              std::vector<int32_t> alive(a.begin(), a.end());
              bool clear2 = false;
              const auto want2 =
                  snap_reference(d, l, g, P - W + 1, W, alive, K, B - 1 - W, per_head, &clear2);
              if (clear2) {
                EXPECT_EQ(b, with_range(want2[j], P - W + 1, P + 2)) << gqa;
              }
              checked += clear2;
            }
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 22);  // 24 cases, (nearly) all clear of near-ties
}

TEST(SnapKvPolicy, SmallBudgetsKeepTheNewestSlots) {
  Data d(30);
  auto p = policy_from("snapkv:budget=5,window=4");  // B <= window + 1: no vote
  d.prefill(*p, 29, 8);
  Selection s;
  p->select(d.step(1, 0, 30), s);
  EXPECT_EQ(s.slots, (std::vector<int32_t>{25, 26, 27, 28, 29}));
  // Without any prefill (decode steps only) nothing is voted either: the newest slots.
  auto q = policy_from("snapkv:budget=6,window=2");
  for (int n = 1; n <= 30; ++n) q->select(d.step(0, 1, n), s);
  EXPECT_EQ(s.slots, (std::vector<int32_t>{24, 25, 26, 27, 28, 29}));
  // A budget covering the cache is dense until something has to go.
  auto r = policy_from("snapkv:budget=30,window=4");
  d.prefill(*r, 29, 8);
  r->select(d.step(0, 0, 30), s);
  EXPECT_TRUE(s.all);
}

// One dense prefill forked into several sessions of the same policy (other budgets) equals each
// session's own prefill, bit for bit; forking from another policy, or from a session that has
// decoded, is refused; eval ppl --decode gives such policies the same numbers.
// A tiny model, random tokens and a prompt (their first n_prompt) for the prefix-copy tests.
struct ForkSetup {
  test::TinySpec spec;
  std::shared_ptr<const Model> model;
  std::vector<int32_t> tokens, prompt;
  ForkSetup(const std::string& file, uint32_t seed, int n_tokens, int n_prompt) {
    const std::string path = ::testing::TempDir() + "/" + file;
    spec.wtype = DType::Q8_0;
    test::write_tiny_model(path, spec);
    model = Model::load(path);
    std::mt19937 rng(seed);
    tokens.resize(n_tokens);
    for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
    prompt.assign(tokens.begin(), tokens.begin() + n_prompt);
  }
  // The session's logits after its prefill, then after each decoded token past the prompt.
  std::vector<float> decode_rest(Session& s) const {
    std::vector<float> out = s.last_logits();
    for (size_t i = prompt.size(); i < tokens.size(); ++i) {
      const auto& l = s.decode(tokens[i]);
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  }
};

TEST(SnapKvPolicy, ForkedPrefillEqualsOwnPrefill) {
  const ForkSetup f("eviction_fork_tiny.gguf", 12, 48, 36);
  const auto& [spec, model, tokens, prompt] = std::tie(f.spec, f.model, f.tokens, f.prompt);
  SessionOptions so;
  so.n_ctx = 64;
  so.prefill_chunk = 16;
  auto run_decode = [&](Session& s) { return f.decode_rest(s); };
  for (const std::string& base :
       {std::string("snapkv:window=4,budget="), std::string("pyramidkv:window=4,beta=3,budget="),
        std::string("h2o:recent=0.5,budget=")}) {
    so.policy = base + "20";
    Session source(model, so);
    source.prefill(prompt);
    for (const char* b : {"9", "12", "0.3"}) {
      so.policy = base + b;
      Session own(model, so);
      own.prefill(prompt);
      Session forked(model, so);
      ASSERT_TRUE(forked.can_copy_prefix_from(source));
      forked.copy_prefix_from(source);
      EXPECT_EQ(run_decode(own), run_decode(forked)) << so.policy;
    }
    // A dense session's copy carries no queries: refused, with a clear message.
    so.policy = "full";
    Session dense(model, so);
    dense.prefill(prompt);
    so.policy = base + "9";
    Session fork(model, so);
    EXPECT_FALSE(fork.can_copy_prefix_from(dense));
    try {
      fork.copy_prefix_from(dense);
      ADD_FAILURE() << "forked from a dense session";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("learns from the prefill queries"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(fork.n_past(), 0);  // unchanged
    // A source that has decoded is no longer a prefill.
    source.decode(tokens[36]);
    EXPECT_THROW(fork.copy_prefix_from(source), Error);
  }
  // Another observation window is another state.
  so.policy = "snapkv:budget=9,window=4";
  Session w4(model, so);
  w4.prefill(prompt);
  so.policy = "snapkv:budget=9,window=5";
  Session w5(model, so);
  EXPECT_THROW(w5.copy_prefix_from(w4), Error);

  // eval ppl --decode: the snapkv sessions prefill themselves (or copy each other): the same
  // numbers as a session that prefilled the chunk's prefix itself.
  PplOptions o;
  o.n_ctx = 48;
  o.n_decode = 12;
  o.batch = 16;
  // (snapkv with window 4 and h2o take their statistics from one watched prefill; window 5 is
  // another state and prefills itself, its second budget copies that, window 6 prefills too.)
  o.compare = {"snapkv:budget=9,window=4", "snapkv:budget=12,window=4",
               "h2o:recent=0.5,budget=9",  "snapkv:budget=9,window=5",
               "snapkv:budget=9,window=6", "snapkv:budget=12,window=5"};
  const auto results = perplexity_all(model, tokens, o, nullptr);
  for (size_t p = 1; p < results.size(); ++p) {
    so.policy = o.compare[p - 1];
    Session s(model, so);
    s.prefill(prompt);
    const std::vector<float> logits = run_decode(s);
    double nll = 0.0;
    for (int i = 0; i < 12; ++i) {
      nll -= log_prob(logits.data() + static_cast<size_t>(i) * spec.n_vocab, spec.n_vocab,
                      tokens[36 + i]);
    }
    EXPECT_DOUBLE_EQ(results[p].mean_nll, nll / 12) << o.compare[p - 1];
  }
}

// One dense prefill watched for several prefill-aware policies (the task runner's shared
// prefill) gives each of them exactly the state its own prefill would. The prompt (33 tokens in
// chunks of 16) would end in a one-token chunk: prefill keeps it dense (no decode step), so
// even the policies' own sessions stay copyable sources.
TEST(PrefillObservers, OneWatchedPrefillEqualsEachPolicysOwn) {
  const ForkSetup f("observers_tiny.gguf", 5, 45, 33);
  const auto& [model, prompt] = std::tie(f.model, f.prompt);
  const PolicyContext ctx = policy_context(model);
  SessionOptions so;
  so.n_ctx = 64;
  so.prefill_chunk = 16;
  auto run_decode = [&](Session& s) { return f.decode_rest(s); };
  const std::vector<std::string> bases = {"snapkv:window=4,budget=",
                                          "pyramidkv:window=4,beta=3,budget=",
                                          "h2o:recent=0.5,budget="};
  std::vector<std::unique_ptr<AttentionPolicy>> members;
  for (const std::string& b : bases) {
    std::string name;
    PolicyOptions po;
    parse_policy_spec(b + "20", &name, &po);
    members.push_back(make_policy(name, ctx, po));
  }
  PrefillObservers observers(std::move(members));
  SessionOptions wo = so;
  wo.external_policy = &observers;
  Session watched(model, wo);
  watched.prefill(prompt);
  EXPECT_EQ(watched.attn_stats().decode_tokens, 0u);  // the one-token tail was not a decode
  so.policy = "full";
  Session dense(model, so);
  dense.prefill(prompt);
  EXPECT_EQ(dense.last_logits(), watched.last_logits());
  for (const std::string& base : bases) {
    for (const char* b : {"9", "14"}) {
      so.policy = base + b;
      Session own(model, so);
      own.prefill(prompt);
      EXPECT_EQ(own.attn_stats().decode_tokens, 0u);
      Session from_own(model, so);
      from_own.copy_prefix_from(own);  // a pristine source (no decode step in its prefill)
      Session forked(model, so);
      ASSERT_TRUE(forked.can_copy_prefix_from(watched)) << so.policy;
      forked.copy_prefix_from(watched);
      const std::vector<float> want = run_decode(own);
      EXPECT_EQ(run_decode(forked), want) << so.policy;
      EXPECT_EQ(run_decode(from_own), want) << so.policy;
    }
  }
  // Sources only for the watched names; another window is another state.
  EXPECT_EQ(prefill_state_source(observers, "quest"), nullptr);
  EXPECT_NE(prefill_state_source(observers, "h2o"), nullptr);
  so.policy = "quest:budget=9";
  Session quest(model, so);
  EXPECT_TRUE(quest.can_copy_prefix_from(watched));  // decode-time: needs the cache only
  so.policy = "snapkv:budget=9,window=5";
  Session w5(model, so);
  EXPECT_THROW(w5.copy_prefix_from(watched), Error);
  EXPECT_EQ(w5.n_past(), 0);
  // Members must learn from the prefill, once each; observers are never a destination.
  auto make = [&](const std::string& s) {
    std::string name;
    PolicyOptions po;
    parse_policy_spec(s, &name, &po);
    return make_policy(name, ctx, po);
  };
  auto expect_refused = [](const std::function<void()>& f, const std::string& what) {
    try {
      f();
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_refused(
      [&] {
        std::vector<std::unique_ptr<AttentionPolicy>> m;
        m.push_back(make("streaming:budget=8"));
        PrefillObservers bad(std::move(m));
      },
      "policy 'streaming' does not learn from the prefill");
  expect_refused(
      [&] {
        std::vector<std::unique_ptr<AttentionPolicy>> m;
        m.push_back(make("h2o:budget=8"));
        m.push_back(make("h2o:budget=9"));
        PrefillObservers bad(std::move(m));
      },
      "policy 'h2o' is watched twice");
  expect_refused([&] { observers.copy_prefill_state_from(observers); },
                 "only gather prefill statistics");
}

// PyramidKV's per-layer budgets: the paper's example sizes, the clamp for short prompts, the
// uniform case, and the policy's selections: each layer keeps its own budget of SnapKV-voted
// slots, with the mean over the layers equal to the budget.
TEST(PyramidKvPolicy, LayerBudgetsFormAPyramidAroundTheBudget) {
  // B = 128, window 32, beta 20, 30 layers, a 1024-token prompt: voted parts 186 down to 4.
  int sum = 0;
  for (int l = 0; l < 30; ++l) {
    const int b = pyramid_layer_budget(128, 1025, 32, 20, 30, l);
    EXPECT_GE(b, 33);
    if (l > 0) {
      EXPECT_LE(b, pyramid_layer_budget(128, 1025, 32, 20, 30, l - 1));
    }
    sum += b;
  }
  EXPECT_EQ(pyramid_layer_budget(128, 1025, 32, 20, 30, 0), 186 + 33);
  EXPECT_EQ(pyramid_layer_budget(128, 1025, 32, 20, 30, 29), 4 + 33);
  EXPECT_EQ(sum, 30 * 128);
  // A prompt just long enough: the bottom layer is clamped to the prompt before the window.
  EXPECT_EQ(pyramid_layer_budget(25, 42, 4, 20, 2, 0), 42);
  EXPECT_EQ(pyramid_layer_budget(25, 42, 4, 20, 2, 1), 8);
  // A prompt shorter than twice the voted part: uniform, as in the authors' code.
  EXPECT_EQ(pyramid_layer_budget(40, 50, 4, 20, 2, 0), 40);
  EXPECT_EQ(pyramid_layer_budget(40, 50, 4, 20, 2, 1), 40);

  const int P = 40, W = 3, K = 7;
  Data d(P + 1, 5);
  auto p = policy_from("pyramidkv:budget=12,window=3,beta=4");
  d.prefill(*p, P, 16);
  int total = 0, checked = 0;
  for (int l = 0; l < kShape.n_layers; ++l) {
    const int kl = pyramid_layer_budget(12, P + 1, W, 4, 2, l);
    EXPECT_EQ(kl, l == 0 ? 14 + 4 : 2 + 4);  // v = 8: lo = 2, hi = 14, plus window + 1
    for (int g = 0; g < kShape.n_kv_heads; ++g) {
      Selection s;
      p->select(d.step(l, g, P + 1), s);
      ASSERT_FALSE(s.all);
      EXPECT_EQ(static_cast<int>(s.slots.size()), kl);
      total += static_cast<int>(s.slots.size());
      std::vector<int32_t> prompt(P);
      std::iota(prompt.begin(), prompt.end(), 0);
      bool clear = false;
      const auto want = snap_reference(d, l, g, P - W, W, prompt, K, kl - 1 - W, false, &clear);
      if (clear) {
        EXPECT_EQ(s.slots, with_range(want[0], P - W, P + 1)) << l;
      }
      checked += clear;
    }
  }
  EXPECT_EQ(total, 12 * kShape.n_layers * kShape.n_kv_heads);
  EXPECT_GE(checked, 3);
}

// H2O against a brute-force simulation in doubles: scores = the prompt queries' causal softmax
// plus every decode step's probabilities over the slots it attended; each step keeps the newest
// round(recent * B) slots and the best-scoring others. Evicted slots never come back.
TEST(H2oPolicy, KeepsTheHeavyHittersOfTheAccumulatedAttention) {
  const int P = 12, S = 30, B = 10;
  Data d(P + S, 8);
  int checked = 0;
  for (const char* gqa : {"shared", "per-head"}) {
    const bool per_head = std::string(gqa) == "per-head";
    const int n_lists = per_head ? kGroup : 1;
    auto p = policy_from("h2o:budget=10,recent=0.3,gqa=" + std::string(gqa));
    d.prefill(*p, P, 12);
    for (int l = 0; l < kShape.n_layers; ++l) {
      // Reference scores [n_heads][slots] and kept lists, per kv head.
      std::vector<std::vector<double>> score(kShape.n_heads, std::vector<double>(P + S, 0.0));
      for (int h = 0; h < kShape.n_heads; ++h) {
        for (int t = 0; t < P; ++t) {
          std::vector<int32_t> keys(t + 1);
          std::iota(keys.begin(), keys.end(), 0);
          const auto pr = d.probs(l, h, t, keys);
          for (int j = 0; j <= t; ++j) score[h][j] += pr[j];
        }
      }
      std::vector<std::vector<int32_t>> alive(kShape.n_kv_heads * n_lists);
      for (auto& a : alive) {
        a.resize(P);
        std::iota(a.begin(), a.end(), 0);
      }
      std::set<std::pair<int, int32_t>> gone;  // (list, slot)
      for (int n = P + 1; n <= P + S; ++n) {
        for (int g = 0; g < kShape.n_kv_heads; ++g) {
          Selection sel;
          p->select(d.step(l, g, n), sel);
          ASSERT_FALSE(sel.all);
          for (int j = 0; j < n_lists; ++j) {
            std::vector<int32_t>& a = alive[g * n_lists + j];
            a.push_back(n - 1);
            const int n_recent = 3, n_old = static_cast<int>(a.size()) - n_recent;
            std::vector<double> mass(n_old, 0.0);
            for (int i = 0; i < kGroup; ++i) {
              if (per_head && i != j) continue;
              for (int c = 0; c < n_old; ++c) mass[c] += score[g * kGroup + i][a[c]];
            }
            double margin = 0.0;
            std::vector<int32_t> want;
            for (int c : top_of(mass, B - n_recent, &margin)) want.push_back(a[c]);
            want.insert(want.end(), a.end() - n_recent, a.end());
            const std::vector<int32_t>& got = sel.slots_for(j);
            for (int32_t s : got) EXPECT_FALSE(gone.count({g * n_lists + j, s})) << "slot " << s;
            if (margin > 1e-5) {
              EXPECT_EQ(got, want) << gqa << " layer " << l << " step " << n;
              ++checked;
            }
            for (int32_t s : a) {
              if (!std::binary_search(got.begin(), got.end(), s)) gone.insert({g * n_lists + j, s});
            }
            a = got;  // follow the policy past a near-tie
          }
          // The driver's probabilities over the attended slots, fed back per query head.
          for (int i = 0; i < kGroup; ++i) {
            const int h = g * kGroup + i;
            const auto& list = sel.slots_for(i);
            const auto pr = d.probs(l, h, n - 1, list);
            std::vector<float> pf(pr.begin(), pr.end());
            facet<ProbabilityObserver>(*p)->on_probs(l, h, sel, pf.data(),
                                                     static_cast<int>(pf.size()));
            for (size_t c = 0; c < list.size(); ++c) score[h][list[c]] += pf[c];
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 250);  // of 2 layers x 30 steps x (2 shared + 4 per-head lists) = 360
}

// A calibration for kShape with random agreements (what matters here is the FC ranking).
const std::string& shape_calib() {
  static const std::string path = [] {
    Calibration c;
    c.model_sha256 = "tiny";
    c.arch = "llama";
    c.n_layers = kShape.n_layers;
    c.n_heads = kShape.n_heads;
    c.n_kv_heads = kShape.n_kv_heads;
    c.head_dim = kHd;
    c.fcs = fc_dims(RopeLayout::Norm, FcLayout::Rope, kHd, kHd);
    c.layers = {0, 1};
    std::mt19937 rng(6);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    c.mean_ca.resize(static_cast<size_t>(c.n_layers) * c.n_heads * c.n_fc());
    for (auto& x : c.mean_ca) x = u(rng);
    c.rank_all();
    const std::string p =
        ::testing::TempDir() + "/eviction_calib_" + std::to_string(getpid()) + ".json";
    save_calibration(c, p);
    return p;
  }();
  return path;
}

// pyramidkv+fasa: FASA chooses among PyramidKV's kept slots only; TIP over a candidate list
// scores each slot as plain FASA does (every slot as candidates = plain FASA's selection).
TEST(PyramidKvFasaPolicy, ChoosesAmongTheKeptSlots) {
  const int P = 40;
  Data d(P + 2, 13);
  const std::string c = "calib=" + shape_calib() + ",dense_layers=none,fcs=calibrated,fc_sets=head";
  for (const char* gqa : {"shared", "per-head"}) {
    auto both = policy_from("pyramidkv+fasa:" + c + ",budget=6,keep=14,window=3,beta=4,gqa=" + gqa);
    auto pyramid = policy_from("pyramidkv:budget=14,window=3,beta=4");
    auto fasa = policy_from("fasa:" + c + ",mean_value=off,budget=6,gqa=" + gqa);
    d.prefill(*both, P, 16);
    d.prefill(*pyramid, P, 16);
    d.prefill(*fasa, P, 16);
    int narrowed = 0;
    for (int n = P + 1; n <= P + 2; ++n) {
      for (int l = 0; l < kShape.n_layers; ++l) {
        for (int g = 0; g < kShape.n_kv_heads; ++g) {
          Selection s, kept, plain, all_cand;
          const AttnQuery q = d.step(l, g, n);
          both->select(q, s);
          pyramid->select(q, kept);
          ASSERT_FALSE(s.all);
          ASSERT_FALSE(kept.all);
          for (int j = 0; j < kGroup; ++j) {
            const auto& chosen = s.slots_for(j);
            EXPECT_EQ(chosen.size(), 6u);
            EXPECT_TRUE(
                std::includes(kept.slots.begin(), kept.slots.end(), chosen.begin(), chosen.end()))
                << gqa << " layer " << l;
          }
          // Plain FASA would pick evicted slots somewhere.
          fasa->select(q, plain);
          for (int j = 0; j < kGroup; ++j) {
            const auto& p = plain.slots_for(j);
            narrowed += !std::includes(kept.slots.begin(), kept.slots.end(), p.begin(), p.end());
          }
          // Every visible slot as candidates: exactly plain FASA.
          std::vector<int32_t> every(n);
          std::iota(every.begin(), every.end(), 0);
          AttnQuery qa = q;
          qa.candidates = every.data();
          qa.n_candidates = n;
          fasa->select(qa, all_cand);
          EXPECT_EQ(all_cand.slots, plain.slots);
          EXPECT_EQ(all_cand.head_slots, plain.head_slots);
        }
      }
    }
    EXPECT_GT(narrowed, 0) << gqa;
  }
}

// keep covering the context: PyramidKV keeps everything and the pair is plain FASA, bit for bit.
TEST(PyramidKvFasaPolicy, KeepCoveringTheContextIsPlainFasa) {
  const std::string path = ::testing::TempDir() + "/eviction_pf_tiny.gguf";
  test::TinySpec spec;
  spec.wtype = DType::Q8_0;
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  std::mt19937 rng(14);
  std::vector<int32_t> text(80), tokens(48);
  for (auto& t : text) t = static_cast<int32_t>(rng() % spec.n_vocab);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  CalibrateOptions co;
  co.k = 8;
  co.samples = 2;
  co.tokens = 30;
  co.steps = 3;
  const std::string calib = ::testing::TempDir() + "/eviction_pf_calib.json";
  save_calibration(calibrate(model, text, co, nullptr), calib);
  SessionOptions so;
  so.n_ctx = 64;
  so.prefill_chunk = 16;
  auto run = [&](const std::string& policy) {
    so.policy = policy;
    Session s(model, so);
    std::vector<float> out = s.prefill(std::vector<int32_t>(tokens.begin(), tokens.begin() + 30));
    for (size_t i = 30; i < tokens.size(); ++i) {
      const auto& l = s.decode(tokens[i]);
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  };
  for (const std::string opts : {",budget=5", ",budget=0.2,gqa=per-head,sink=2,recent=2"}) {
    const auto plain = run("fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib + opts);
    EXPECT_EQ(run("pyramidkv+fasa:fcs=calibrated,fc_sets=head,calib=" + calib + opts + ",keep=64"),
              plain)
        << opts;
    EXPECT_NE(run("pyramidkv+fasa:fcs=calibrated,fc_sets=head,calib=" + calib + opts +
                  ",keep=12,window=4"),
              plain)
        << opts;
  }
}

TEST(EvictionPolicyOptions, BadOptionsAreErrors) {
  auto message = [](const std::string& spec) -> std::string {
    try {
      policy_from(spec);
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_NE(message("snapkv").find("needs a budget"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=0").find("budget"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,window=0").find("window must be"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,kernel=4").find("kernel must be odd"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,kernel=x").find("kernel must be"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,gqa=some").find("gqa must be"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,recompress=-1").find("recompress must be"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,beta=20").find("no option 'beta'"), std::string::npos);
  EXPECT_NE(message("pyramidkv:beta=4").find("needs a budget"), std::string::npos);
  EXPECT_NE(message("pyramidkv:budget=8,beta=0").find("beta must be"), std::string::npos);
  EXPECT_NE(message("pyramidkv:budget=8,beta=x").find("beta must be"), std::string::npos);
  EXPECT_NE(message("pyramidkv:budget=8,kernel=2").find("kernel must be odd"), std::string::npos);
  EXPECT_NE(message("pyramidkv:budget=8,sinks=2").find("no option 'sinks'"), std::string::npos);
  EXPECT_NE(message("h2o").find("needs a budget"), std::string::npos);
  EXPECT_NE(message("h2o:budget=8,recent=1.5").find("recent must be"), std::string::npos);
  EXPECT_NE(message("h2o:budget=8,recent=x").find("recent must be"), std::string::npos);
  EXPECT_NE(message("h2o:budget=8,gqa=x").find("gqa must be"), std::string::npos);
  EXPECT_NE(message("h2o:budget=8,window=3").find("no option 'window'"), std::string::npos);
  const std::string pf =
      "pyramidkv+fasa:fcs=calibrated,fc_sets=head,calib=" + shape_calib() + ",budget=4";
  EXPECT_NE(message(pf).find("needs keep=K"), std::string::npos);
  EXPECT_NE(message(pf + ",keep=abc").find("'pyramidkv': budget"), std::string::npos);
  EXPECT_NE(message(pf + ",keep=16,variant=m").find("FASA-C only"), std::string::npos);
  EXPECT_NE(message(pf + ",keep=16,beta=0").find("beta must be"), std::string::npos);
  EXPECT_NE(message(pf + ",keep=16,speed=2").find("policy 'fasa' has no option 'speed'"),
            std::string::npos);
  EXPECT_NE(message("pyramidkv+fasa:budget=4,keep=16,calib=/nonexistent.json").find("nonexistent"),
            std::string::npos);
  EXPECT_NE(message("pyramidkv+fasa:budget=4,keep=16,calib=online,variant=m").find("FASA-C only"),
            std::string::npos);
  EXPECT_NE(message("snapkv+fasa:budget=4")
                .find("combination 'snapkv+fasa' is not supported "
                      "(supported: pyramidkv+fasa)"),
            std::string::npos);
}

}  // namespace
}  // namespace fasa
