// The three storage kinds of a KvCache (attention/kv_layer_store.h) behind their one interface:
// each gives back exactly the row bits encode_kv_row makes, and the plain and ring stores expose
// them in place.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "fasa/attention/kv_layer_store.h"
#include "fasa/attention/kv_tier.h"
#include "fasa/attention/kv_tiered_store.h"

namespace fasa {
namespace {

constexpr int kHeadDim = 64, kKvHeads = 2, kCapacity = 40;

std::vector<float> random_row(std::mt19937& rng) {
  std::normal_distribution<float> d;
  std::vector<float> x(kHeadDim);
  for (float& v : x) v = d(rng);
  return x;
}

// Stores slots 0..n-1 of both heads, then gathers `slots` and compares with the encoded rows.
void expect_round_trip(KvLayerStore& s, KvType type, int n, const std::vector<int32_t>& slots) {
  std::mt19937 rng(7);
  const size_t rb = kv_row_bytes(type, kHeadDim);
  std::vector<std::vector<uint8_t>> want_k(kKvHeads * n), want_v(kKvHeads * n);
  for (int slot = 0; slot < n; ++slot) {
    for (int g = 0; g < kKvHeads; ++g) {
      const std::vector<float> k = random_row(rng), v = random_row(rng);
      s.store(g, slot, k.data(), v.data());
      auto& wk = want_k[g * n + slot];
      auto& wv = want_v[g * n + slot];
      wk.resize(rb);
      wv.resize(rb);
      encode_kv_row(type, kHeadDim, k.data(), wk.data());
      encode_kv_row(type, kHeadDim, v.data(), wv.data());
    }
  }
  for (int g = 0; g < kKvHeads; ++g) {
    std::vector<uint8_t> k(slots.size() * rb), v(slots.size() * rb);
    s.gather(g, slots.data(), static_cast<int>(slots.size()), k.data(), v.data());
    for (size_t j = 0; j < slots.size(); ++j) {
      EXPECT_EQ(std::memcmp(k.data() + j * rb, want_k[g * n + slots[j]].data(), rb), 0)
          << kv_type_name(type) << " head " << g << " slot " << slots[j];
      EXPECT_EQ(std::memcmp(v.data() + j * rb, want_v[g * n + slots[j]].data(), rb), 0)
          << kv_type_name(type) << " head " << g << " slot " << slots[j];
    }
  }
}

TEST(KvStores, EveryKindGivesBackTheBitsItStored) {
  for (KvType type : {KvType::F16, KvType::F32, KvType::Q8_0}) {
    KvPlainStore plain(type, kHeadDim, kKvHeads, kCapacity);
    expect_round_trip(plain, type, kCapacity, {0, 3, 17, 39});
    EXPECT_EQ(plain.tiered(), nullptr);
    EXPECT_EQ(plain.ram_bytes(10), 2ull * kKvHeads * 10 * kv_row_bytes(type, kHeadDim));
    // In place: row 17 of head 1 is where k_rows says.
    std::vector<uint8_t> k(kv_row_bytes(type, kHeadDim)), v(k.size());
    const int32_t slot = 17;
    plain.gather(1, &slot, 1, k.data(), v.data());
    EXPECT_EQ(std::memcmp(plain.k_rows(1) + 17 * k.size(), k.data(), k.size()), 0);

    // A ring of 8 rows over 20 slots: the last 8 slots are there.
    KvRingStore ring(type, kHeadDim, kKvHeads, 8);
    EXPECT_EQ(ring.row_of(19), 3);
    expect_round_trip(ring, type, 20, {12, 13, 18, 19});
    EXPECT_EQ(ring.ram_bytes(20), 2ull * kKvHeads * 8 * kv_row_bytes(type, kHeadDim));

    const std::vector<std::vector<int>> hot = {{1, 5, 9, 40}, {}};
    std::vector<size_t> region_rows(kKvHeads);
    for (int g = 0; g < kKvHeads; ++g) {
      region_rows[g] = KvTieredStore::tier_row_bytes(type, kHeadDim, hot[g].size());
    }
    KvTier tier(::testing::TempDir(), region_rows, kCapacity);
    KvTieredStore tiered(type, kHeadDim, kCapacity, hot, &tier, 0);
    EXPECT_EQ(tiered.tiered(), &tiered);
    EXPECT_EQ(tiered.k_rows(0), nullptr);
    expect_round_trip(tiered, type, kCapacity, {0, 2, 30, 39});
    EXPECT_EQ(tiered.hot_dims(0), hot[0]);
  }
}

}  // namespace
}  // namespace fasa
