// Equal-resource accounting: distinct rows per kv-head group (distinct_slots), and the rows an
// eviction policy has evicted for good (AttentionPolicy::evicted_rows), which the cache frees
// (KvCache::freed_rows) so that the session's resident bytes leave them out, on a tiny model with
// exact counts.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fasa/attention/policy.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

TEST(DistinctSlots, ARowTwoHeadsReadCountsOnce) {
  Selection se;
  EXPECT_EQ(distinct_slots(se, 3, 40), 40);  // all: every visible row
  se.all = false;
  se.slots = {1, 5, 9};
  EXPECT_EQ(distinct_slots(se, 3, 40), 3);  // shared: one list for the group
  se.per_head = true;
  se.head_slots = {{0, 1, 2, 3}, {2, 3, 4, 5}, {3, 9}};
  EXPECT_EQ(distinct_slots(se, 3, 40), 7);  // {0, 1, 2, 3, 4, 5, 9}, not 4 + 4 + 2
  se.head_slots = {{4, 7}, {4, 7}};
  EXPECT_EQ(distinct_slots(se, 2, 40), 2);
  se.head_slots = {{}, {6}};
  EXPECT_EQ(distinct_slots(se, 2, 40), 1);
  // More heads than the merge keeps cursors for (70): head g reads slots g and g + 1.
  se.head_slots.clear();
  for (int32_t g = 0; g < 70; ++g) se.head_slots.push_back({g, g + 1});
  EXPECT_EQ(distinct_slots(se, 70, 100), 71);
  se.head_slots.resize(64);  // the merge: slots 0 .. 64
  EXPECT_EQ(distinct_slots(se, 64, 100), 65);
}

// The tiny model: 2 layers, 4 query heads in 2 kv-head groups, head_dim 16; an f16 cache.
constexpr int kL = 2, kKv = 2, kHd = 16;
constexpr uint64_t kRow = 2ull * kHd * 2;  // one K row and one V row
constexpr int kPrompt = 30, kSteps = 5, kBudget = 8;
constexpr int kN = kPrompt + kSteps;  // slots at the end (the last step saw all of them)

struct Held {
  uint64_t evicted = 0, freed = 0, ram = 0, side = 0, resident = 0, peak = 0;
};

Held run(const std::string& policy) {
  static const std::shared_ptr<const Model> model = [] {
    const std::string path = ::testing::TempDir() + "/evicted_rows_tiny.gguf";
    test::write_tiny_model(path, test::TinySpec{});
    return Model::load(path);
  }();
  const auto tokens = test::random_tokens(kN, test::TinySpec{}.n_vocab, 5);
  SessionOptions so;
  so.n_ctx = 64;
  so.policy = policy;
  Session s(model, so);
  s.prefill(std::vector<int32_t>(tokens.begin(), tokens.begin() + kPrompt));
  EXPECT_EQ(s.kv_resident_peak_bytes(), 0u);  // no decode step yet
  for (int i = 0; i < kSteps; ++i) s.decode(tokens[kPrompt + i]);
  return Held{s.facets().evicted_rows(),   s.cache().freed_rows(), s.cache().ram_bytes(),
              s.policy().resident_bytes(), s.kv_resident_bytes(),  s.kv_resident_peak_bytes()};
}

// Full and selecting (non-evicting) policies may read every row again: nothing evicted, the
// resident bytes are the cache's plus the side data.
TEST(EvictedRows, SelectingPoliciesEvictNothing) {
  for (const std::string p : {"full", "oracle:budget=8", "quest:budget=8,page=4"}) {
    const Held r = run(p);
    EXPECT_EQ(r.evicted, 0u) << p;
    EXPECT_EQ(r.freed, 0u) << p;
    EXPECT_EQ(r.ram, uint64_t{kL} * kKv * kN * kRow) << p;
    EXPECT_EQ(r.resident, r.ram + r.side) << p;
  }
}

// Each eviction policy keeps exactly B slots per (layer, kv head) at a budget of B tokens (the
// pyramid's layers B + 3 and B - 3): the other N - B rows of every group are gone for good, and
// the resident bytes are the kept rows plus the side data, far below full's.
TEST(EvictedRows, EvictionPoliciesHoldOnlyWhatTheyKeep) {
  const Held full = run("full");
  for (const std::string p : {"streaming:budget=8,sinks=2", "h2o:budget=8",
                              "snapkv:budget=8,window=4", "pyramidkv:budget=8,window=4"}) {
    const Held r = run(p);
    EXPECT_EQ(r.evicted, uint64_t{kL} * kKv * (kN - kBudget)) << p;
    // B kept rows: a batch of frees is an eighth of them, rounded down (here 1): all freed.
    EXPECT_EQ(r.freed, r.evicted) << p;
    EXPECT_EQ(r.ram, uint64_t{kL} * kKv * kBudget * kRow) << p;
    EXPECT_EQ(r.resident, r.ram + r.side) << p;
    EXPECT_LT(r.resident, full.resident) << p;
    // B kept rows plus the new one each step and a side that does not shrink: the last step is
    // the peak.
    EXPECT_EQ(r.peak, r.resident) << p;
  }
  // Per-head lists: a row stays while any head of its group keeps it (at most 4 heads x B ...).
  const Held per_head = run("h2o:budget=8,gqa=per-head");
  EXPECT_LE(per_head.evicted, uint64_t{kL} * kKv * (kN - kBudget));
  EXPECT_GE(per_head.evicted, uint64_t{kL} * kKv * (kN - 2 * kBudget));
  // Up to 16 kept rows: frees come in batches of up to 2, so one row per group may wait.
  EXPECT_LE(per_head.freed, per_head.evicted);
  EXPECT_GE(per_head.freed + uint64_t{kL} * kKv, per_head.evicted);
  EXPECT_EQ(per_head.ram, uint64_t{kL} * kKv * kN * kRow - per_head.freed * kRow);
  EXPECT_EQ(per_head.resident, per_head.ram + per_head.side);
}

// A fractional budget: StreamingLLM's sink count may still grow up to sinks=, so only the slots
// past the sinks' room count as evicted for good (a conservative count).
TEST(EvictedRows, StreamingFractionKeepsTheSinksRoom) {
  const Held r = run("streaming:budget=0.25,sinks=4");
  // At 35 slots: k = ceil(0.25 * 35) = 9, 4 sinks, 5 recent: slots [4, 30) skipped, all gone.
  EXPECT_EQ(r.evicted, uint64_t{kL} * kKv * (kN - 9));
  EXPECT_EQ(r.freed, r.evicted);
  const Held small = run("streaming:budget=0.1,sinks=8");
  // k = 4 at 35 slots: 3 sinks and the newest; slots [3, 8) may become sinks again as k grows.
  EXPECT_EQ(small.evicted, uint64_t{kL} * kKv * (kN - 1 - 8));
  EXPECT_EQ(small.freed, small.evicted);
}

}  // namespace
}  // namespace fasa
