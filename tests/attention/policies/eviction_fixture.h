// Shared by the eviction policies' tests (snapkv, pyramidkv, h2o, pyramidkv+fasa, prefill
// observers): random tokens and queries with brute-force votes, a tiny model for prefix forks,
// and a calibration for the test shape. Everything has internal linkage (one copy per test file).
#pragma once

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

inline std::unique_ptr<AttentionPolicy> policy_from(const std::string& spec,
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
inline std::vector<int> top_of(const std::vector<double>& s, int keep, double* margin) {
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
inline std::vector<std::vector<int32_t>> snap_reference(const Data& d, int layer, int kv, int s_w,
                                                        int w, const std::vector<int32_t>& alive,
                                                        int kernel, int keep, bool per_head,
                                                        bool* clear) {
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

inline std::vector<int32_t> with_range(std::vector<int32_t> v, int lo, int hi) {
  for (int s = lo; s < hi; ++s) v.push_back(s);
  return v;
}

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

// A calibration for kShape with random agreements (what matters here is the FC ranking).
inline const std::string& shape_calib() {
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

}  // namespace
}  // namespace fasa
