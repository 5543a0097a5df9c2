// What the policy tests share (tests/attention/policies/*_test.cpp, policy_core_test.cpp): one
// small attention shape, a cache of random keys and values with a random query per head, a
// policy context for that shape, calibrations of it, and a policy made from a spec.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policy.h"

namespace fasa::test {

inline const AttnShape kShape{2, 4, 2, 16, {}};  // n_layers, n_heads, n_kv_heads, head_dim

// A cache of kShape with n random tokens (slots 0..n-1 at positions 0..n-1, f32) and a random
// query per head, all from `seed`.
struct RandomCache {
  // integer: small whole numbers, so every logit (full or per FC) is exact in float.
  explicit RandomCache(int n, uint32_t seed = 1, bool integer = false);
  // The decode-step query of (layer, kv_head): the group's rows of q, every slot visible.
  AttnQuery query(int layer, int kv_head) const;
  // Shows p every row of every layer (on_append of slots [0, n)).
  void show(AttentionPolicy& p) const;

  KvCache cache;
  std::vector<float> q;  // [n_heads, head_dim]
};

// A policy context for kShape (a llama, NORM RoPE over the whole head) whose model is `sha`.
PolicyContext test_context(const std::string& sha = "tiny-test-model");

// Calibrations of kShape's "tiny-test-model", written once per test process: random agreements
// (what matters is the FC ranking); the same with Double Sparsity's channel importance (format
// version 3); the same with compound CA sets of 4 FCs per head and per kv head (version 4).
const std::string& calib_path();
const std::string& ds_calib_path();
const std::string& compound_calib_path();

// make_policy of a spec ("name:key=value,...").
std::unique_ptr<AttentionPolicy> policy_from(const std::string& spec,
                                             const PolicyContext& ctx = test_context());
// make_policy(spec) throws a fasa::Error whose message contains `what`.
void expect_policy_error(const std::string& spec, const std::string& what,
                         const PolicyContext& ctx = test_context());

// The whole layer at once (select_layer, split over threads) equals group by group (select):
// the same slots, bytes and mixing weights, bit for bit. `spec` names the policy in failures.
void expect_layer_equals_groups(AttentionPolicy& p, const RandomCache& c, int layer,
                                const std::string& spec);

// One decode step of `layer` through the attention driver with c's cache and queries (the newest
// slot is the query's own). Returns [n_heads, head_dim].
std::vector<float> decode_through_driver(const RandomCache& c, AttentionPolicy& p, int layer);

}  // namespace fasa::test
