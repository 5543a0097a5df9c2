// KV bytes read and resident, per policy and tier, equal the exact counts derived here from the
// shapes, the budgets and the packed slice (docs/POLICIES.md's accounting rules), on a tiny model
// over a few decode steps: not bounds, the numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fasa/attention/calibration.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

// The tiny model: 2 layers, 4 query heads in 2 kv-head groups, head_dim 16; an f16 cache.
constexpr int kL = 2, kHeads = 4, kKv = 2, kGroup = 2, kHd = 16, kEb = 2;
constexpr uint64_t kRow = 2ull * kHd * kEb;  // one K row and one V row: 64 bytes
constexpr int kPrompt = 30, kSteps = 5, kBudget = 8;
constexpr int kNTip = 2;  // FCs per head

// The FCs each (layer, head) ranks first, by construction of the calibration below.
// [layer][head][n_tip]. Group 0 = heads 0, 1; group 1 = heads 2, 3.
const int kTopFcs[kL][kHeads][kNTip] = {
    {{0, 1}, {1, 2}, {3, 4}, {5, 6}},  // layer 0: unions {0,1,2} and {3,4,5,6}
    {{7, 0}, {0, 7}, {2, 3}, {4, 3}},  // layer 1: unions {0,7} and {2,3,4}
};
// Packed key dims per (layer, kv head): 2 dims per FC of the group's union.
uint64_t packed_dims(int layer, int g) {
  std::set<int> fcs;
  for (int j = 0; j < kGroup; ++j) {
    for (int i = 0; i < kNTip; ++i) fcs.insert(kTopFcs[layer][g * kGroup + j][i]);
  }
  return 2 * fcs.size();
}

struct Tiny {
  std::shared_ptr<const Model> model;
  std::vector<int32_t> tokens;
  std::string calib;
  Tiny() {
    const std::string path = ::testing::TempDir() + "/kv_bytes_tiny.gguf";
    test::TinySpec spec;  // the defaults are the shape above
    test::write_tiny_model(path, spec);
    model = Model::load(path);
    const ModelConfig& mc = model->config();
    EXPECT_EQ(mc.n_layers, kL);
    EXPECT_EQ(mc.n_heads, kHeads);
    EXPECT_EQ(mc.n_kv_heads, kKv);
    EXPECT_EQ(mc.head_dim, kHd);
    tokens = test::random_tokens(kPrompt + kSteps, spec.n_vocab, 9);
    // A calibration whose rankings put kTopFcs first (agreements 0.9 and 0.8, the rest lower).
    Calibration c;
    c.model_sha256 = model_identity(*model);
    c.arch = mc.arch;
    c.n_layers = kL;
    c.n_heads = kHeads;
    c.n_kv_heads = kKv;
    c.head_dim = kHd;
    c.rope_layout = mc.rope_layout;
    c.fcs = fc_dims(mc.rope_layout, FcLayout::Rope, kHd, mc.rope_dim);
    c.layers = {0, 1};
    c.k = 8;
    c.mean_ca.assign(static_cast<size_t>(kL) * kHeads * c.n_fc(), 0.0f);
    for (int l = 0; l < kL; ++l) {
      for (int h = 0; h < kHeads; ++h) {
        float* ca = c.mean_ca.data() + (static_cast<size_t>(l) * kHeads + h) * c.n_fc();
        for (int f = 0; f < c.n_fc(); ++f) ca[f] = 0.1f + 0.01f * f;
        ca[kTopFcs[l][h][0]] = 0.9f;
        ca[kTopFcs[l][h][1]] = 0.8f;
      }
    }
    c.rank_all();
    calib = ::testing::TempDir() + "/kv_bytes_calib.json";
    save_calibration(c, calib);
  }
};

const Tiny& tiny() {
  static const Tiny t;
  return t;
}

struct Measured {
  AttnStats stats;
  uint64_t policy_resident = 0, ram = 0, file = 0, block = 0;
};

// A registered policy that also counts, independently of the driver, the rows each decode
// step's selections read: per kv-head group the size of the std::set union of its lists, and
// the sum of the lists' sizes over the query heads (the count before rows were distinct).
class Recorder final : public AttentionPolicy, public ProbabilityObserver {
 public:
  explicit Recorder(const std::string& spec) {
    std::string name;
    PolicyOptions opts;
    parse_policy_spec(spec, &name, &opts);
    p_ = make_policy(name, policy_context(tiny().model), opts);
    probs_ = facet<ProbabilityObserver>(*p_);
  }
  uint64_t distinct = 0, summed = 0;

  std::string_view name() const override { return p_->name(); }
  void on_append(const KvCache& c, int layer, int first, int n) override {
    p_->on_append(c, layer, first, n);
  }
  void select(const AttnQuery& q, Selection& out) override {
    p_->select(q, out);
    record(q, out);
  }
  void select_layer(const AttnQuery* qs, int n, Selection* outs) override {
    p_->select_layer(qs, n, outs);
    for (int g = 0; g < n; ++g) record(qs[g], outs[g]);
  }
  bool offers(Facet f) const override { return f != Facet::Probs || probs_; }
  void on_probs(int layer, int head, const Selection& sel, const float* probs, int n) override {
    probs_->on_probs(layer, head, sel, probs, n);
  }
  uint64_t resident_bytes() const override { return p_->resident_bytes(); }

 private:
  void record(const AttnQuery& q, const Selection& se) {
    std::set<int32_t> rows;
    for (int g = 0; g < q.n_group; ++g) {
      const int n = se.all ? q.n_visible : static_cast<int>(se.slots_for(g).size());
      summed += n;
      for (int i = 0; i < n; ++i) rows.insert(se.all ? i : se.slots_for(g)[i]);
    }
    distinct += rows.size();
  }
  std::unique_ptr<AttentionPolicy> p_;
  ProbabilityObserver* probs_ = nullptr;  // p_'s, or null
};

// Dense prefill of kPrompt tokens, then kSteps decode steps (with `external` as the policy when
// given).
Measured measure(const std::string& policy, AttentionPolicy* external = nullptr) {
  const Tiny& t = tiny();
  SessionOptions so;
  so.n_ctx = 64;
  so.policy = policy;
  so.external_policy = external;
  Session s(t.model, so);
  s.prefill(std::vector<int32_t>(t.tokens.begin(), t.tokens.begin() + kPrompt));
  for (int i = 0; i < kSteps; ++i) s.decode(t.tokens[kPrompt + i]);
  return Measured{s.attn_stats(), s.policy().resident_bytes(), s.cache().ram_bytes(),
                  s.cache().file_bytes(), s.cache().tier_block_bytes()};
}

// Per-head selections: each group's rows count once however many of its heads read them (the
// union of the heads' lists), so AttnStats' rows and bytes equal the recorder's distinct count,
// which is below the per-head sum here (the heads share some rows).
void expect_distinct_rows(const std::string& spec, uint64_t select_per_slot) {
  Recorder rec(spec);
  const Measured r = measure(spec, &rec);
  EXPECT_LT(rec.distinct, rec.summed) << spec << ": no two heads of a group share a row";
  EXPECT_GT(rec.distinct, uint64_t{kSteps} * kL * kKv * kBudget) << spec;  // the lists differ
  EXPECT_EQ(rec.summed, uint64_t{kSteps} * kL * kHeads * kBudget) << spec;
  EXPECT_EQ(r.stats.slots_read, rec.distinct) << spec;
  EXPECT_EQ(r.stats.attend_bytes, rec.distinct * kRow) << spec;
  uint64_t select = 0, visible = 0;
  for (int i = 0; i < kSteps; ++i) {
    select += kL * (kPrompt + i + 1) * select_per_slot;
    visible += kL * kKv * (kPrompt + i + 1);
  }
  EXPECT_EQ(r.stats.select_bytes, select) << spec;
  EXPECT_EQ(r.stats.slots_visible, visible) << spec;
}

// What a policy reads at one decode step of one layer with n visible slots.
struct StepBytes {
  uint64_t select = 0;  // to choose
  uint64_t rows =
      0;  // distinct K/V rows attention reads, per kv-head group (AttnStats::slots_read)
};

// Sums a per-(layer, n) rule over the decode steps and checks every AttnStats field.
void expect_stats(const std::string& policy, const AttnStats& s,
                  const std::function<StepBytes(int layer, int n)>& rule) {
  uint64_t select = 0, attend = 0, dense = 0, slots = 0, visible = 0;
  for (int i = 0; i < kSteps; ++i) {
    const uint64_t n = kPrompt + i + 1;  // the new token's own slot included
    for (int l = 0; l < kL; ++l) {
      const StepBytes b = rule(l, static_cast<int>(n));
      select += b.select;
      attend += b.rows * kRow;
      slots += b.rows;
      dense += kKv * n * kRow;
      visible += kKv * n;
    }
  }
  EXPECT_EQ(s.decode_tokens, uint64_t{kSteps}) << policy;
  EXPECT_EQ(s.decode_steps, uint64_t{kSteps} * kL * kHeads) << policy;
  EXPECT_EQ(s.select_bytes, select) << policy;
  EXPECT_EQ(s.attend_bytes, attend) << policy;
  EXPECT_EQ(s.dense_bytes, dense) << policy;
  EXPECT_EQ(s.slots_read, slots) << policy;
  EXPECT_EQ(s.slots_visible, visible) << policy;
  EXPECT_EQ(s.window_slots, 0u) << policy;
  EXPECT_EQ(s.window_bytes, 0u) << policy;
}

// Every step dense: n rows per kv head (read once for its group).
StepBytes dense_step(int n) { return StepBytes{0, uint64_t{kKv} * n}; }
// B rows shared by each group.
StepBytes shared_rows(uint64_t select) { return StepBytes{select, uint64_t{kKv} * kBudget}; }

constexpr uint64_t kTokens = kPrompt + kSteps;  // slots written at the end
// The plain cache: K and V of every token, every layer, kv head and dim.
constexpr uint64_t kCacheBytes = kL * kKv * kTokens * kRow;

TEST(KvBytes, Full) {
  const Measured r = measure("full");
  expect_stats("full", r.stats, [](int, int n) { return dense_step(n); });
  EXPECT_EQ(r.stats.attend_bytes, r.stats.dense_bytes);
  EXPECT_EQ(r.policy_resident, 0u);
  EXPECT_EQ(r.ram, kCacheBytes);
  EXPECT_EQ(r.file, 0u);
}

TEST(KvBytes, Oracle) {
  // Every key of the group (head_dim values per slot), then B rows: shared per group, per head
  // with gqa=per-head.
  const Measured shared = measure("oracle:budget=8");
  expect_stats("oracle", shared.stats,
               [](int, int n) { return shared_rows(uint64_t{kKv} * n * kHd * kEb); });
  expect_distinct_rows("oracle:budget=8,gqa=per-head", uint64_t{kKv} * kHd * kEb);
  EXPECT_EQ(shared.policy_resident, 0u);
  EXPECT_EQ(shared.ram, kCacheBytes);
}

// FASA-C: layer 0 dense (the default); layer 1 reads the packed slice of every slot (its
// group's union of dominant dims) and B full rows per group. The policy keeps that slice for
// every token written, next to the whole cache.
TEST(KvBytes, FasaCompute) {
  const std::string spec =
      "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + tiny().calib + ",budget=8,n_tip=2";
  const Measured r = measure(spec);
  EXPECT_EQ(packed_dims(1, 0), 4u);
  EXPECT_EQ(packed_dims(1, 1), 6u);
  expect_stats(spec, r.stats, [](int l, int n) {
    if (l == 0) return dense_step(n);
    return shared_rows(static_cast<uint64_t>(n) * (packed_dims(1, 0) + packed_dims(1, 1)) * kEb);
  });
  EXPECT_EQ(r.policy_resident, kTokens * (4 + 6) * kEb);
  EXPECT_EQ(r.ram, kCacheBytes);
  EXPECT_EQ(r.file, 0u);
  // Without dense layers: both layers' slices, read and kept.
  const std::string none = spec + ",dense_layers=none";
  const Measured all = measure(none);
  expect_stats(none, all.stats, [](int l, int n) {
    return shared_rows(static_cast<uint64_t>(n) * (packed_dims(l, 0) + packed_dims(l, 1)) * kEb);
  });
  EXPECT_EQ(packed_dims(0, 0) + packed_dims(0, 1), 6u + 8u);
  EXPECT_EQ(all.policy_resident, kTokens * (4 + 6 + 6 + 8) * kEb);
}

// FASA-M: the same reads (the same slots, whichever tier holds them); RAM holds the packed slice
// of the sparse layer and the dense layer 0 whole; the sparse layer's other K dims and all its V
// go to the file, one region of rows per kv head, written out in whole blocks (the rest waits in
// RAM tails). The policy keeps nothing itself. The RAM row cache adds the rows read from the file
// (at most its 2 x budget rows per region) and its index (4 bytes per slot and region).
TEST(KvBytes, FasaMemory) {
  const std::string spec = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + tiny().calib +
                           ",budget=8,n_tip=2,variant=m," + "offload_dir=" + ::testing::TempDir();
  const Measured r = measure(spec + ",row_cache=0");
  expect_stats(spec, r.stats, [](int l, int n) {
    if (l == 0) return dense_step(n);
    return shared_rows(static_cast<uint64_t>(n) * (packed_dims(1, 0) + packed_dims(1, 1)) * kEb);
  });
  EXPECT_EQ(r.policy_resident, 0u);
  ASSERT_GT(r.block, 0u);
  const uint64_t hot = kTokens * (packed_dims(1, 0) + packed_dims(1, 1)) * kEb;
  const uint64_t dense = kKv * kTokens * kRow;  // layer 0, K and V rows
  uint64_t file = 0, tails = 0, cold_rows = 0;
  for (int g = 0; g < kKv; ++g) {
    const uint64_t region = kTokens * (kHd - packed_dims(1, g) + kHd) * kEb;  // cold K + V
    file += region / r.block * r.block;
    tails += region % r.block;
    cold_rows += region;
  }
  EXPECT_EQ(dense + hot + cold_rows, kCacheBytes);  // every K/V value in exactly one tier
  EXPECT_EQ(r.file, file);
  EXPECT_EQ(r.ram, dense + hot + tails);  // layer 0, the hot slice, the rows not yet a block
  EXPECT_EQ(r.stats.tier_cache_hits, 0u);
  // With the row cache (default): the same reads and file; RAM gains the cached rows.
  const Measured c = measure(spec);
  EXPECT_EQ(c.stats.attend_bytes, r.stats.attend_bytes);
  EXPECT_EQ(c.file, r.file);
  EXPECT_EQ(c.stats.tier_rows, r.stats.tier_rows);
  const uint64_t index = kKv * 64 * sizeof(int32_t);  // n_ctx 64 slots per region
  ASSERT_GT(c.ram, r.ram + index);
  uint64_t most = 0;
  for (int g = 0; g < kKv; ++g) most += 2 * 8 * (kHd - packed_dims(1, g) + kHd) * kEb;
  EXPECT_LE(c.ram, r.ram + index + most);
}

// Quest, page 4, layer 1 sparse: every page's min/max box (2 x head_dim values) per group, then
// exactly B rows; it keeps the boxes of the sparse layer's pages.
TEST(KvBytes, Quest) {
  const std::string spec = "quest:budget=8,page=4,dense_layers=0";
  const Measured r = measure(spec);
  auto pages = [](uint64_t n) { return (n + 3) / 4; };
  expect_stats(spec, r.stats, [&](int l, int n) {
    if (l == 0) return dense_step(n);
    return shared_rows(uint64_t{kKv} * pages(n) * 2 * kHd * kEb);
  });
  EXPECT_EQ(r.policy_resident, kKv * pages(kTokens) * 2 * kHd * kEb);
  EXPECT_EQ(r.ram, kCacheBytes);
}

// SparQ, r = head_dim / 8 = 2: each query head reads r key dims of every slot, then its own B
// rows (per-head selections: the group's union); it keeps one running V sum (head_dim doubles)
// per (layer, kv head).
TEST(KvBytes, Sparq) {
  expect_distinct_rows("sparq:budget=8", uint64_t{kHeads} * 2 * kEb);
  const Measured r = measure("sparq:budget=8");
  EXPECT_EQ(r.policy_resident, uint64_t{kL} * kKv * kHd * sizeof(double));
  EXPECT_EQ(r.ram, kCacheBytes);
}

// StreamingLLM: nothing read to choose, B rows per group, nothing kept.
TEST(KvBytes, Streaming) {
  const Measured r = measure("streaming:budget=8,sinks=2");
  expect_stats("streaming", r.stats, [](int, int) { return shared_rows(0); });
  EXPECT_EQ(r.policy_resident, 0u);
  EXPECT_EQ(r.ram, kCacheBytes / kTokens * 8);  // the cache freed all but the 8 rows it reads
}

}  // namespace
}  // namespace fasa
