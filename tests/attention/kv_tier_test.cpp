// The file-backed KV tier (FASA-M's slow memory) and the tiered cache built on it: every row
// comes back bit for bit, whatever the row size, block boundaries, chunking or selection.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/attention/kv_tier.h"
#include "fasa/core/error.h"

namespace fasa {
namespace {

std::vector<int32_t> random_sorted_slots(std::mt19937& rng, int n_visible, int k) {
  std::set<int32_t> s;
  while (static_cast<int>(s.size()) < std::min(k, n_visible)) s.insert(rng() % n_visible);
  return {s.begin(), s.end()};
}

// With and without the RAM row cache (one smaller than most reads, so rows are evicted and read
// again; after reset() the same slots hold new rows: a stale copy would show).
class KvTierRows : public ::testing::TestWithParam<int> {};

TEST_P(KvTierRows, ComeBackExactlyAcrossBlocksTailsAndResets) {
  const std::vector<size_t> row_bytes = {200, 0, 4096, 70};  // odd sizes, an unused region
  const int capacity = 300;
  KvTier tier(::testing::TempDir(), row_bytes, capacity, GetParam());
  std::mt19937 rng(3);
  for (int round = 0; round < 2; ++round) {  // the second round reuses the file after reset()
    // want[r]: [capacity, row_bytes[r]]
    std::vector<std::vector<uint8_t>> want(row_bytes.size());
    for (size_t r = 0; r < row_bytes.size(); ++r) want[r].resize(capacity * row_bytes[r]);
    int n = 0;
    for (int chunk : {1, 37, 1, 1, 128, 5, 1, 90}) {  // prefill chunks and decode steps
      for (int s = n; s < n + chunk; ++s) {
        for (size_t r = 0; r < row_bytes.size(); ++r) {
          if (row_bytes[r] == 0) continue;
          uint8_t* row = want[r].data() + s * row_bytes[r];
          for (size_t i = 0; i < row_bytes[r]; ++i) row[i] = static_cast<uint8_t>(rng());
          tier.write(static_cast<int>(r), s, row);
        }
      }
      n += chunk;
      tier.flush(n);
      for (size_t r = 0; r < row_bytes.size(); ++r) {
        const size_t rb = row_bytes[r];
        if (rb == 0) continue;
        for (int k : {1, 7, n}) {
          const auto slots = random_sorted_slots(rng, n, k);
          std::vector<uint8_t> got(slots.size() * rb);
          tier.read(static_cast<int>(r), slots.data(), static_cast<int>(slots.size()), got.data());
          for (size_t j = 0; j < slots.size(); ++j) {
            ASSERT_TRUE(std::equal(got.begin() + j * rb, got.begin() + (j + 1) * rb,
                                   want[r].begin() + slots[j] * rb))
                << "round " << round << " region " << r << " slot " << slots[j] << " of " << n;
          }
        }
        std::vector<uint8_t> all(n * rb);  // null slots: rows 0..n-1
        tier.read(static_cast<int>(r), nullptr, n, all.data());
        ASSERT_TRUE(std::equal(all.begin(), all.end(), want[r].begin()));
      }
    }
    tier.check_io();
    tier.reset();
    EXPECT_EQ(tier.file_bytes(), 0u);
  }
  const TierStats st = tier.stats();
  EXPECT_GT(st.reads, 0u);
  EXPECT_GT(st.writes, 0u);
  EXPECT_EQ(st.read_bytes % tier.block_bytes(), 0u);  // whole blocks only
  EXPECT_EQ(st.write_bytes % tier.block_bytes(), 0u);
  if (GetParam() > 0) {
    EXPECT_GT(st.cache_hits, 0u);
  }
  EXPECT_GT(st.rows, st.cache_hits);
  std::printf("tier: direct I/O %s, block %zu B\n", tier.direct_io() ? "yes" : "no",
              tier.block_bytes());
}

INSTANTIATE_TEST_SUITE_P(RowCache, KvTierRows, ::testing::Values(0, 50));

// A step that selects what the last one did reads nothing from the device; the cache's rows are
// the file's, only rows wholly in the file join it, and its bytes are counted.
TEST(KvTier, RowCacheServesRepeatedRowsWithoutDeviceReads) {
  const size_t rb = 340;
  const int capacity = 400, n = 390, cache_rows = 64;
  KvTier tier(::testing::TempDir(), {rb}, capacity, cache_rows);
  std::mt19937 rng(11);
  std::vector<uint8_t> want(capacity * rb);  // [capacity, rb]
  for (int s = 0; s < n; ++s) {
    for (size_t i = 0; i < rb; ++i) want[s * rb + i] = static_cast<uint8_t>(rng());
    tier.write(0, s, want.data() + s * rb);
  }
  tier.flush(n);
  const uint64_t flushed = n * rb / tier.block_bytes() * tier.block_bytes();
  auto read = [&](const std::vector<int32_t>& slots) {
    std::vector<uint8_t> got(slots.size() * rb);
    tier.read(0, slots.data(), static_cast<int>(slots.size()), got.data());
    for (size_t j = 0; j < slots.size(); ++j) {
      EXPECT_TRUE(std::equal(got.begin() + j * rb, got.begin() + (j + 1) * rb,
                             want.begin() + slots[j] * rb))
          << "slot " << slots[j];
    }
  };
  std::vector<uint8_t> all(n * rb);  // every row (null slots): bypasses the cache
  tier.read(0, nullptr, n, all.data());
  EXPECT_TRUE(std::equal(all.begin(), all.end(), want.begin()));
  EXPECT_EQ(tier.cache_bytes(), capacity * sizeof(int32_t));
  const auto first = random_sorted_slots(rng, n, 40);
  read(first);
  uint64_t in_file = 0;
  for (int32_t s : first) in_file += (static_cast<uint64_t>(s) + 1) * rb <= flushed;
  const TierStats before = tier.stats();
  read(first);  // the same selection again
  const TierStats d = tier.stats() - before;
  EXPECT_EQ(d.rows, first.size());
  EXPECT_EQ(d.cache_hits, in_file);
  EXPECT_EQ(d.read_bytes, 0u);  // the tail's rows are RAM too
  EXPECT_EQ(tier.cache_bytes(), in_file * rb + capacity * sizeof(int32_t));
  // Many new rows: the cache stays within its rows, and every row still comes back exactly.
  for (int round = 0; round < 10; ++round) read(random_sorted_slots(rng, n, 50));
  EXPECT_LE(tier.cache_bytes(), cache_rows * rb + capacity * sizeof(int32_t));
  tier.reset();
  EXPECT_EQ(tier.cache_bytes(), capacity * sizeof(int32_t));
  tier.check_io();
}

TEST(KvTier, PrefetchedRowsAreCopiedAndTheRestRead) {
  const std::vector<size_t> row_bytes = {300, 64};
  const int capacity = 200;
  KvTier tier(::testing::TempDir(), row_bytes, capacity);
  std::mt19937 rng(5);
  std::vector<std::vector<uint8_t>> want(row_bytes.size());  // [capacity, row_bytes[r]] each
  const int n = 150;
  for (size_t r = 0; r < row_bytes.size(); ++r) {
    want[r].resize(capacity * row_bytes[r]);
    for (int s = 0; s < n; ++s) {
      uint8_t* row = want[r].data() + s * row_bytes[r];
      for (size_t i = 0; i < row_bytes[r]; ++i) row[i] = static_cast<uint8_t>(rng());
      tier.write(static_cast<int>(r), s, row);
    }
  }
  tier.flush(n);
  for (int round = 0; round < 20; ++round) {
    const int r = round % 2;
    const size_t rb = row_bytes[r];
    const auto guess = random_sorted_slots(rng, n, 40);
    const auto slots = random_sorted_slots(rng, n, 30);
    const TierStats before = tier.stats();
    tier.prefetch(r, guess.data(), static_cast<int>(guess.size()));
    std::vector<uint8_t> got(slots.size() * rb);
    tier.read(r, slots.data(), static_cast<int>(slots.size()), got.data());
    for (size_t j = 0; j < slots.size(); ++j) {
      ASSERT_TRUE(std::equal(got.begin() + j * rb, got.begin() + (j + 1) * rb,
                             want[r].begin() + slots[j] * rb))
          << "round " << round << " slot " << slots[j];
    }
    // Hits are the wanted rows the guess had, among those wholly in the file.
    // Region r's file part: its whole blocks (the rest stays in its RAM tail).
    const uint64_t flushed = n * rb / tier.block_bytes() * tier.block_bytes();
    uint64_t expect_hits = 0, expect_rows = 0;
    for (int32_t g : guess) {
      if ((static_cast<uint64_t>(g) + 1) * rb > flushed) continue;
      ++expect_rows;
      if (std::binary_search(slots.begin(), slots.end(), g)) ++expect_hits;
    }
    const TierStats d = tier.stats() - before;
    EXPECT_EQ(d.prefetch_rows, expect_rows) << "round " << round;
    EXPECT_EQ(d.prefetch_hits, expect_hits) << "round " << round;
    EXPECT_GT(d.prefetch_read_bytes, 0u);
  }
  // A prefetch never used, then reset: dropped cleanly; rows in the RAM tail are not fetched.
  const std::vector<int32_t> all = random_sorted_slots(rng, n, n);
  tier.prefetch(0, all.data(), n);
  tier.reset();
  EXPECT_EQ(tier.file_bytes(), 0u);
  std::vector<uint8_t> row(row_bytes[0], 7);
  tier.write(0, 0, row.data());
  const TierStats before = tier.stats();
  const int32_t zero = 0;
  tier.prefetch(0, &zero, 1);  // only in the tail: nothing to fetch
  std::vector<uint8_t> got(row_bytes[0]);
  tier.read(0, &zero, 1, got.data());
  EXPECT_EQ(got, row);
  EXPECT_EQ((tier.stats() - before).prefetch_rows, 0u);
  tier.check_io();
}

TEST(KvTier, ABadDirectoryIsAnError) {
  EXPECT_THROW(KvTier("/nonexistent/fasa-tier", {64}, 8), Error);
  EXPECT_THROW(KvTier("", {64}, 8), Error);
}

// A tiered cache returns exactly the rows a plain cache holds; RAM keeps only the hot dims
// (column-major: dim i of slot t at i * capacity + t).
TEST(KvCacheTiering, GatherEqualsThePlainCache) {
  const AttnShape shape{3, 4, 2, 16, {}};
  for (KvType type : {KvType::F16, KvType::F32}) {
    KvTiering t;
    t.dir = ::testing::TempDir();
    t.offload_layer = {0, 1, 1};  // layer 0 stays in RAM
    t.hot_dims = {{}, {}, {0, 1, 8, 9}, {2, 3, 14, 15}, {0, 5}, {4, 5, 6, 7, 10, 11}};
    const int cap = 100;
    KvCache plain(shape, type, cap), tiered(shape, type, cap, &t);
    std::mt19937 rng(11);
    std::normal_distribution<float> nd;
    std::vector<float> k(16), v(16);
    int n = 0;
    for (int chunk : {40, 1, 1, 33, 1}) {
      std::vector<int32_t> pos(chunk);
      for (int i = 0; i < chunk; ++i) pos[i] = n + i;
      for (int s = n; s < n + chunk; ++s) {
        for (int l = 0; l < 3; ++l) {
          for (int g = 0; g < 2; ++g) {
            for (auto& x : k) x = nd(rng);
            for (auto& x : v) x = nd(rng);
            plain.store(l, g, s, k.data(), v.data());
            tiered.store(l, g, s, k.data(), v.data());
          }
        }
      }
      plain.commit(chunk, pos.data());
      tiered.commit(chunk, pos.data());
      n += chunk;
      EXPECT_FALSE(tiered.offloaded(0));
      EXPECT_TRUE(tiered.offloaded(1));
      for (int l = 0; l < 3; ++l) {
        for (int g = 0; g < 2; ++g) {
          const auto slots = random_sorted_slots(rng, n, 9);
          const size_t row = 16 * plain.elem_bytes(), m = slots.size();
          std::vector<uint8_t> k1(m * row), v1(m * row), k2(m * row), v2(m * row);
          plain.gather(l, g, slots.data(), static_cast<int>(m), k1.data(), v1.data());
          tiered.gather(l, g, slots.data(), static_cast<int>(m), k2.data(), v2.data());
          EXPECT_EQ(k1, k2) << l << " " << g;
          EXPECT_EQ(v1, v2) << l << " " << g;
          if (l > 0) {  // the hot slice holds the listed dims, packed
            const auto& dims = tiered.hot_dims(l, g);
            const auto* hot = static_cast<const uint8_t*>(tiered.hot_rows(l, g));
            const auto* kr = static_cast<const uint8_t*>(plain.k_rows(l, g));
            const size_t eb = plain.elem_bytes();
            for (size_t i = 0; i < dims.size(); ++i) {
              EXPECT_TRUE(std::equal(hot + (i * cap + slots[0]) * eb,
                                     hot + (i * cap + slots[0] + 1) * eb,
                                     kr + (slots[0] * 16 + dims[i]) * eb));
            }
          }
        }
      }
    }
    tiered.check_io();
    EXPECT_LT(tiered.ram_bytes(), plain.ram_bytes() / 2);
    EXPECT_GT(tiered.file_bytes(), 0u);
    EXPECT_EQ(plain.ram_bytes(), plain.used_bytes());
    tiered.clear();
    EXPECT_EQ(tiered.file_bytes(), 0u);
  }
}

}  // namespace
}  // namespace fasa
