// Eviction policies free what they evict (KvCache::evict, Session::free_evicted): the decode
// outputs are bit-identical to a cache that keeps every row, the freed rows' pages really leave
// RAM, a prompt that follows decode steps reads exactly the kept rows, and what cannot work on a
// freed cache (copying it, lossless decoding after it) is refused with a clear error.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/core/error.h"
#include "fasa/core/page_buffer.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

std::shared_ptr<const Model> tiny(int n_ctx = 256) {
  test::TinySpec spec;
  spec.n_ctx = n_ctx;
  const std::string path =
      ::testing::TempDir() + "/evict_free_tiny_" + std::to_string(n_ctx) + ".gguf";
  test::write_tiny_model(path, spec);
  return Model::load(path);
}

const std::vector<std::string>& eviction_policies() {
  static const std::vector<std::string> p = {"streaming:budget=8,sinks=2",
                                             "streaming:budget=0.2,sinks=4",
                                             "h2o:budget=10",
                                             "h2o:budget=10,gqa=per-head",
                                             "snapkv:budget=12,window=4",
                                             "snapkv:budget=12,window=4,gqa=per-head,recompress=5",
                                             "pyramidkv:budget=12,window=4"};
  return p;
}

// Every decode step's logits, the prompt's first, with freeing on or off.
std::vector<float> decode_logits(const std::shared_ptr<const Model>& m, const std::string& policy,
                                 KvType kv, bool free_rows, uint64_t* freed = nullptr) {
  const auto tokens = test::random_tokens(140, test::TinySpec{}.n_vocab, 9);
  SessionOptions so;
  so.n_ctx = 160;
  so.kv_type = kv;
  so.policy = policy;
  so.free_evicted_rows = free_rows;
  Session s(m, so);
  std::vector<float> out = s.prefill(std::vector<int32_t>(tokens.begin(), tokens.begin() + 40));
  for (size_t i = 40; i < tokens.size(); ++i) {
    const std::vector<float>& l = s.decode(tokens[i]);
    out.insert(out.end(), l.begin(), l.end());
  }
  if (freed) *freed = s.cache().freed_rows();
  return out;
}

// The attention reads the same rows (moved, not changed) in the same order: every bit equal.
TEST(EvictFree, DecodeIsBitIdenticalToACacheThatKeepsEveryRow) {
  const auto m = tiny();
  for (KvType kv : {KvType::F16, KvType::F32}) {
    for (const std::string& p : eviction_policies()) {
      uint64_t freed = 0;
      const std::vector<float> a = decode_logits(m, p, kv, true, &freed);
      const std::vector<float> b = decode_logits(m, p, kv, false);
      EXPECT_GT(freed, 0u) << p;  // 100 steps past a budget of 8..12: rows were freed
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << p;
    }
  }
}

// Policies that may read any row again free nothing.
TEST(EvictFree, SelectingPoliciesFreeNothing) {
  const auto m = tiny();
  for (const std::string p : {"full", "oracle:budget=8", "quest:budget=8,page=4"}) {
    uint64_t freed = 1;
    decode_logits(m, p, KvType::F16, true, &freed);
    EXPECT_EQ(freed, 0u) << p;
  }
}

// Freed rows leave RAM: a streaming cache of 4096 f32 rows of 64 dims (256 B a row, 16 a page)
// keeps its sinks and recent run resident, and the pages between them are gone.
TEST(EvictFree, FreedPagesLeaveRam) {
  test::TinySpec spec;
  spec.n_ctx = 4096;
  spec.n_layers = 1;
  spec.d_model = 256;
  spec.n_heads = 4;
  spec.n_kv_heads = 1;
  const std::string path = ::testing::TempDir() + "/evict_free_pages.gguf";
  test::write_tiny_model(path, spec);
  const auto m = Model::load(path);
  const auto tokens = test::random_tokens(3000, spec.n_vocab, 3);
  SessionOptions so;
  so.n_ctx = 4096;
  so.kv_type = KvType::F32;
  so.policy = "streaming:budget=64,sinks=4";
  so.prefill_chunk = 512;
  Session s(m, so);
  s.prefill(std::vector<int32_t>(tokens.begin(), tokens.begin() + 2900));
  const KvCache& c = s.cache();
  ASSERT_EQ(c.row_bytes(), 256u);
  const size_t page = PageBuffer::page_size();
  EXPECT_EQ(c.resident_k_pages(0, 0, 0, 2900), (2900u * 256 + page - 1) / page);
  for (int i = 2900; i < 3000; ++i) s.decode(tokens[i]);
  // The sinks (4 slots) and the recent run (60) are kept; the rest is freed in batches of one.
  EXPECT_EQ(c.freed_rows(), 3000u - 64);
  EXPECT_EQ(c.ram_bytes(), 2ull * 64 * 256);
  const int page_rows = static_cast<int>(page / 256);
  // Rows [4, 2940) are the hole (the recent run is slots [2940, 3000), still in their rows):
  // the whole pages in it are gone, the run's are there.
  const int hole_lo = (4 + page_rows - 1) / page_rows * page_rows;
  const int hole_hi = 2940 / page_rows * page_rows;
  EXPECT_EQ(c.resident_k_pages(0, 0, hole_lo, hole_hi), 0u);
  EXPECT_EQ(c.resident_k_pages(0, 0, 2940, 3000),
            ((3000 * 256 + page - 1) / page) - (2940 * 256 / page));
  EXPECT_EQ(s.kv_resident_bytes(), c.ram_bytes() + s.policy().resident_bytes());
}

// A policy that, after `switch_at` decode steps of the eviction policy it wraps, reads every
// slot the wrapped one still keeps: what a prompt after those steps must read on a freed cache.
class ReadKept final : public AttentionPolicy, public ProbabilityObserver, public PrefillObserver {
 public:
  explicit ReadKept(std::unique_ptr<AttentionPolicy> p)
      : p_(std::move(p)),
        probs_(facet<ProbabilityObserver>(*p_)),
        prefill_(facet<PrefillObserver>(*p_)),
        eviction_(facet<EvictingPolicy>(*p_)) {}
  std::string_view name() const override { return p_->name(); }
  bool offers(Facet f) const override {
    if (f == Facet::Probs) return probs_ != nullptr;
    if (f == Facet::Prefill) return prefill_ != nullptr;
    return true;
  }
  void on_append(const KvCache& c, int l, int f, int n) override { p_->on_append(c, l, f, n); }
  void on_probs(int l, int h, const Selection& s, const float* pr, int n) override {
    if (!frozen_) probs_->on_probs(l, h, s, pr, n);
  }
  void on_prefill_queries(const KvCache& c, int l, int f, int n, const float* q) override {
    prefill_->on_prefill_queries(c, l, f, n, q);
  }
  void copy_prefill_state_from(const AttentionPolicy&) override {}
  void select(const AttnQuery& q, Selection& out) override {
    if (!frozen_) {
      p_->select(q, out);
      return;
    }
    int horizon = 0;
    out.all = false;
    out.per_head = false;
    out.bytes_read = 0;
    FASA_CHECK(eviction_->kept_slots(q.layer, q.kv_head, &horizon, &out.slots));
    for (int s = horizon; s < q.n_visible; ++s) out.slots.push_back(s);
  }
  bool frozen_ = false;

 private:
  std::unique_ptr<AttentionPolicy> p_;
  ProbabilityObserver* probs_;  // p_'s facets, or null
  PrefillObserver* prefill_;
  EvictingPolicy* eviction_;
};

// A prompt after decode steps attends exactly over the kept rows: its logits equal decode steps
// (same kernels for up to Session::kMaxVerify tokens) that read every kept slot of a cache that
// kept every row, and they differ from that cache's own dense prompt (which reads evicted rows).
TEST(EvictFree, APromptAfterEvictionReadsExactlyTheKeptRows) {
  const auto m = tiny();
  const auto tokens = test::random_tokens(100, test::TinySpec{}.n_vocab, 4);
  const std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + 40);
  const std::vector<int32_t> more(tokens.begin() + 90, tokens.begin() + 96);  // 6 tokens
  for (const std::string spec :
       {"streaming:budget=8,sinks=2", "h2o:budget=10", "snapkv:budget=12,window=4"}) {
    SessionOptions so;
    so.n_ctx = 128;
    so.policy = spec;
    Session a(m, so);  // frees
    a.prefill(prompt);
    for (int i = 40; i < 90; ++i) a.decode(tokens[i]);
    const std::vector<float> la = a.prefill(more);

    std::string name;
    PolicyOptions opts;
    parse_policy_spec(spec, &name, &opts);
    ReadKept wrap(make_policy(name, policy_context(m), opts));
    so.external_policy = &wrap;
    so.free_evicted_rows = false;
    Session b(m, so);
    b.prefill(prompt);
    for (int i = 40; i < 90; ++i) b.decode(tokens[i]);
    wrap.frozen_ = true;
    std::vector<float> lb;
    for (int32_t t : more) lb = b.decode(t);
    ASSERT_EQ(la.size(), lb.size());
    EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)), 0) << spec;

    so.external_policy = nullptr;  // the same policy, every row kept: its prompt reads them all
    Session c(m, so);
    c.prefill(prompt);
    for (int i = 40; i < 90; ++i) c.decode(tokens[i]);
    EXPECT_NE(std::memcmp(la.data(), c.prefill(more).data(), la.size() * sizeof(float)), 0) << spec;
  }
}

TEST(EvictFree, AFreedCacheIsNotCopiedAndLosslessNeedsEveryRow) {
  const auto m = tiny();
  const auto tokens = test::random_tokens(80, test::TinySpec{}.n_vocab, 6);
  SessionOptions so;
  so.n_ctx = 128;
  so.policy = "streaming:budget=8,sinks=2";
  Session a(m, so);
  a.prefill(std::vector<int32_t>(tokens.begin(), tokens.begin() + 40));
  for (int i = 40; i < 60; ++i) a.decode(tokens[i]);
  ASSERT_TRUE(a.cache().any_evicted());
  Session b(m, so);
  try {
    b.copy_prefix_from(a);
    FAIL() << "copied a freed cache";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("evicted rows were freed"), std::string::npos);
  }
  try {
    a.save_point();
    FAIL() << "lossless decoding started on a freed cache";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lossless decoding needs every row"), std::string::npos);
  }
  // reset() forgets the freed rows: the session runs again from slot 0, with the same outputs.
  a.reset();
  EXPECT_FALSE(a.cache().any_evicted());
  EXPECT_EQ(a.cache().freed_rows(), 0u);
  Session fresh(m, so);
  const auto first = std::vector<int32_t>(tokens.begin(), tokens.begin() + 40);
  EXPECT_EQ(a.prefill(first), fresh.prefill(first));
  for (int i = 40; i < 60; ++i) EXPECT_EQ(a.decode(tokens[i]), fresh.decode(tokens[i]));
  // Lossless decoding from the start keeps every row (its verification reads them all).
  Session l(m, so);
  l.prefill(first);
  l.save_point();
  for (int i = 40; i < 60; ++i) l.decode(tokens[i]);
  EXPECT_EQ(l.cache().freed_rows(), 0u);
}

// KvCache::evict on its own: kept rows move down in slot order and keep their bits; gone stays
// gone; rows_of maps slots to rows.
TEST(EvictFree, CacheEvictMovesKeptRowsAndMapsSlots) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the thread pool runs beside the test
  AttnShape sh;
  sh.n_layers = 1;
  sh.n_heads = 2;
  sh.n_kv_heads = 1;
  sh.head_dim = 8;
  KvCache c(sh, KvType::F32, 64);
  std::vector<float> k(8), v(8);
  std::vector<int32_t> pos(40);
  for (int s = 0; s < 40; ++s) {
    for (int d = 0; d < 8; ++d) k[d] = 100.0f * s + d, v[d] = -k[d];
    c.store(0, 0, s, k.data(), v.data());
    pos[s] = s;
  }
  c.commit(40, pos.data());
  auto key_of_row = [&](int row) {
    return static_cast<const float*>(c.k_rows(0, 0))[static_cast<size_t>(row) * 8];
  };
  EXPECT_FALSE(c.evict(0, 0, {0, 1, 2}, 3));  // too few gone for a batch of... none gone
  ASSERT_TRUE(c.evict(0, 0, {0, 5, 9}, 20, /*now=*/true));
  EXPECT_EQ(c.freed_rows(), 17u);
  const std::vector<int32_t> slots = {0, 5, 9, 20, 39};
  std::vector<int32_t> rows(slots.size());
  c.rows_of(0, 0, slots.data(), 5, rows.data());
  EXPECT_EQ(rows, (std::vector<int32_t>{0, 1, 2, 20, 39}));
  for (size_t j = 0; j < slots.size(); ++j) EXPECT_EQ(key_of_row(rows[j]), 100.0f * slots[j]);
  ASSERT_TRUE(c.evict(0, 0, {5, 21, 30}, 35, true));  // 0 and 9 go now, 21 and 30 move down
  c.rows_of(0, 0, std::vector<int32_t>{5, 21, 30, 35}.data(), 4, rows.data());
  EXPECT_EQ(std::vector<int32_t>(rows.begin(), rows.begin() + 4),
            (std::vector<int32_t>{0, 1, 2, 35}));
  EXPECT_EQ(key_of_row(0), 500.0f);
  EXPECT_EQ(key_of_row(1), 2100.0f);
  EXPECT_EQ(key_of_row(2), 3000.0f);
  EXPECT_EQ(c.freed_rows(), 32u);
  EXPECT_EQ(c.ram_bytes(), 2ull * (40 - 32) * 8 * 4);
  EXPECT_DEATH(c.evict(0, 0, {9, 21}, 36, true), "internal check failed");  // 9 was gone
  EXPECT_THROW(c.truncate(30), Error);                                      // below the horizon
  c.clear();
  EXPECT_EQ(c.freed_rows(), 0u);
}

}  // namespace
}  // namespace fasa
