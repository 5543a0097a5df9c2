// Session::fill_synthetic (`fasa bench --depth-fill synthetic`): random K/V rows through the
// forward's store / on_append / commit path.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "fasa/attention/policy.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/expect_error.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

// Full attention that records every on_append call: (layer, first_slot, n).
class RecordingPolicy : public AttentionPolicy {
 public:
  std::vector<std::array<int, 3>> appends;
  std::string_view name() const override { return "recording"; }
  void on_append(const KvCache&, int layer, int first_slot, int n) override {
    appends.push_back({layer, first_slot, n});
  }
  void select(const AttnQuery&, Selection& out) override { out.set_all(); }
};

std::shared_ptr<const Model> tiny_model(const std::string& name, const test::TinySpec& spec) {
  const std::string path = ::testing::TempDir() + "/" + name;
  test::write_tiny_model(path, spec);
  return Model::load(path);
}

// The cache holds the D synthetic tokens (positions 0..D-1, every layer's rows), the policy saw
// each chunk of every layer, and decoding continues from there with finite logits.
TEST(SyntheticFill, CacheHoldsTheTokensAndThePolicySeesThem) {
  auto model = tiny_model("synthetic_fill.gguf", {});
  RecordingPolicy rec;
  SessionOptions so;
  so.n_ctx = 128;
  so.prefill_chunk = 16;
  so.external_policy = &rec;
  Session s(model, so);
  s.fill_synthetic(40, 5);
  EXPECT_EQ(s.n_past(), 40);
  EXPECT_EQ(s.cache().used_bytes(),
            40ull * 2 * 2 * 2 * 16 * 2);  // tokens * layers * kv * K,V * hd * f16
  for (int slot = 0; slot < 40; ++slot) EXPECT_EQ(s.cache().pos_of(slot), slot);
  const std::vector<std::array<int, 3>> want = {{0, 0, 16},  {1, 0, 16}, {0, 16, 16},
                                                {1, 16, 16}, {0, 32, 8}, {1, 32, 8}};
  EXPECT_EQ(rec.appends, want);
  // Rows are random and differ between slots and seeds.
  const auto* k = static_cast<const uint16_t*>(s.cache().k_rows(1, 1));
  EXPECT_NE(k[0], k[16]);
  s.fill_synthetic(2, 6);
  EXPECT_EQ(s.n_past(), 42);
  const std::vector<float>& logits = s.decode(3);
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
  EXPECT_EQ(s.attn_stats().decode_tokens, 1u);
  EXPECT_EQ(s.attn_stats().dense_bytes, 43ull * 2 * 2 * 2 * 16 * 2);  // all 43 rows, each layer
}

// Same seed, same rows: two sessions filled alike decode to the same logits.
TEST(SyntheticFill, Deterministic) {
  auto model = tiny_model("synthetic_fill_det.gguf", {});
  SessionOptions so;
  so.n_ctx = 64;
  Session a(model, so), b(model, so);
  a.fill_synthetic(30, 9);
  b.fill_synthetic(30, 9);
  EXPECT_EQ(a.decode(1), b.decode(1));
}

// A sliding-window layer keeps its ring, as after a prefill.
TEST(SyntheticFill, SlidingWindowRing) {
  test::TinySpec spec;
  spec.arch = "gemma3";
  spec.sliding_window = 8;
  spec.window_pattern = 2;
  auto model = tiny_model("synthetic_fill_gemma.gguf", spec);
  SessionOptions so;
  so.n_ctx = 128;
  so.prefill_chunk = 4;
  Session s(model, so);
  s.fill_synthetic(100, 1);
  const uint64_t row = 2ull * 2 * 16 * 2;                       // kv heads * (K, V) * hd * f16
  EXPECT_EQ(s.cache().layer_used_bytes(0), (8 + 4 - 1) * row);  // the ring
  EXPECT_EQ(s.cache().layer_used_bytes(1), 100 * row);
  for (float x : s.decode(2)) ASSERT_TRUE(std::isfinite(x));
}

TEST(SyntheticFill, BadInputsAreRefused) {
  auto model = tiny_model("synthetic_fill_bad.gguf", {});
  SessionOptions so;
  so.n_ctx = 32;
  Session s(model, so);
  test::expect_error([&] { s.fill_synthetic(0, 1); }, "token count must be >= 1 (got 0)");
  test::expect_error([&] { s.fill_synthetic(33, 1); }, "context overflow");
  EXPECT_EQ(s.n_past(), 0);
  so.policy = "snapkv:budget=8";
  Session snap(model, so);
  test::expect_error([&] { snap.fill_synthetic(8, 1); },
                     "policy 'snapkv' learns from the prefill queries");
}

}  // namespace
}  // namespace fasa
