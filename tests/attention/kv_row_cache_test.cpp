// FASA-M's RAM row cache (kv_row_cache.h): rows come back as inserted, CLOCK evicts the rows not
// found again first, and a disabled cache finds nothing.
#include "fasa/attention/kv_row_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace fasa {
namespace {

std::vector<uint8_t> row_of(int32_t slot, size_t rb) {
  std::vector<uint8_t> r(rb);
  for (size_t i = 0; i < rb; ++i) r[i] = static_cast<uint8_t>(slot * 7 + i);
  return r;
}

// The slots of `slots` the cache holds (and marks) now.
std::vector<int32_t> held(KvRowCache& c, int region, const std::vector<int32_t>& slots, size_t rb) {
  std::vector<uint8_t> dst(slots.size() * rb);
  std::vector<int32_t> missing;
  c.lookup(region, slots.data(), static_cast<int>(slots.size()), dst.data(), missing);
  std::vector<int32_t> out;
  size_t m = 0;
  for (size_t j = 0; j < slots.size(); ++j) {
    if (m < missing.size() && missing[m] == static_cast<int32_t>(j)) {
      ++m;
      continue;
    }
    EXPECT_EQ(std::vector<uint8_t>(dst.begin() + j * rb, dst.begin() + (j + 1) * rb),
              row_of(slots[j], rb));
    out.push_back(slots[j]);
  }
  return out;
}

TEST(KvRowCache, RowsComeBackAndClockEvictsTheUnmarkedFirst) {
  const size_t rb = 24;
  KvRowCache c({rb, 0, rb}, 4, 100);  // region 1 unused
  ASSERT_TRUE(c.enabled());
  for (int32_t s : {10, 20, 30, 40}) c.insert(0, s, row_of(s, rb).data());
  EXPECT_EQ(held(c, 0, {10, 20, 30, 40, 50}, rb), (std::vector<int32_t>{10, 20, 30, 40}));
  EXPECT_EQ(held(c, 2, {10}, rb), std::vector<int32_t>{});  // regions are separate
  // All four are marked now; find 20 and 40 again after the hand's pass unmarks them all.
  c.insert(0, 50, row_of(50, rb).data());  // the hand unmarks 10..40, evicts 10
  EXPECT_EQ(held(c, 0, {20, 40}, rb), (std::vector<int32_t>{20, 40}));
  c.insert(0, 60, row_of(60, rb).data());  // 20 marked, 30 not: 30 goes
  c.insert(0, 70, row_of(70, rb).data());  // 40 marked, 50 not: 50 goes
  EXPECT_EQ(held(c, 0, {10, 20, 30, 40, 50, 60, 70}, rb), (std::vector<int32_t>{20, 40, 60, 70}));
  c.insert(0, 20, row_of(20, rb).data());  // already held: nothing changes
  EXPECT_EQ(c.row_bytes_held(), 4 * rb);
  EXPECT_EQ(c.index_bytes(), 2 * 100 * sizeof(int32_t));
  c.clear();
  EXPECT_EQ(held(c, 0, {20, 40, 60, 70}, rb), std::vector<int32_t>{});
  EXPECT_EQ(c.row_bytes_held(), 0u);
}

TEST(KvRowCache, NoRowsMeansEveryRowIsMissing) {
  KvRowCache c({16}, 0, 50);
  EXPECT_FALSE(c.enabled());
  c.insert(0, 3, row_of(3, 16).data());
  EXPECT_EQ(held(c, 0, {3}, 16), std::vector<int32_t>{});
  EXPECT_EQ(c.index_bytes(), 0u);
}

}  // namespace
}  // namespace fasa
