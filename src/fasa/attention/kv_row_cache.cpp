#include "fasa/attention/kv_row_cache.h"

#include <algorithm>
#include <cstring>

#include "fasa/core/error.h"

namespace fasa {

KvRowCache::KvRowCache(const std::vector<size_t>& row_bytes, int rows_per_region, int capacity)
    : rows_(rows_per_region < 0 ? 0 : std::min(rows_per_region, capacity)), capacity_(capacity) {
  if (rows_ == 0) return;
  regions_.resize(row_bytes.size());
  for (size_t r = 0; r < row_bytes.size(); ++r) {
    Region& g = regions_[r];
    g.row_bytes = row_bytes[r];
    if (g.row_bytes == 0) continue;
    g.where.assign(capacity, -1);
    g.owner.assign(rows_, -1);
    g.marked.assign(rows_, 0);  // g.data grows as rows arrive (victim)
  }
}

int KvRowCache::lookup(int r, const int32_t* slots, int n, uint8_t* dst,
                       std::vector<int32_t>& missing) {
  if (rows_ == 0) {
    for (int j = 0; j < n; ++j) missing.push_back(j);
    return 0;
  }
  Region& g = regions_[r];
  int found = 0;
  for (int j = 0; j < n; ++j) {
    const int32_t slot = slots ? slots[j] : j;
    FASA_DCHECK(slot >= 0 && slot < capacity_);
    const int32_t e = g.where[slot];
    if (e < 0) {
      missing.push_back(j);
      continue;
    }
    std::memcpy(dst + static_cast<size_t>(j) * g.row_bytes,
                g.data.data() + static_cast<size_t>(e) * g.row_bytes, g.row_bytes);
    g.marked[e] = 1;
    ++found;
  }
  return found;
}

// The entry to fill: a free one while any is left, else the first unmarked one from the hand
// (unmarking the marked ones it passes).
int KvRowCache::victim(Region& g) {
  if (g.used < rows_) {
    const size_t need = static_cast<size_t>(g.used + 1) * g.row_bytes;
    if (g.data.size() < need)
      g.data.resize(
          std::min(std::max(need, 2 * g.data.size()), static_cast<size_t>(rows_) * g.row_bytes));
    return g.used++;
  }
  for (;;) {
    const int e = g.hand;
    g.hand = g.hand + 1 == rows_ ? 0 : g.hand + 1;
    if (!g.marked[e]) return e;
    g.marked[e] = 0;
  }
}

void KvRowCache::insert(int r, int32_t slot, const uint8_t* row) {
  if (rows_ == 0) return;
  Region& g = regions_[r];
  FASA_DCHECK(slot >= 0 && slot < capacity_ && g.row_bytes > 0);
  if (g.where[slot] >= 0) return;
  const int e = victim(g);
  if (g.owner[e] >= 0) g.where[g.owner[e]] = -1;
  g.owner[e] = slot;
  g.where[slot] = e;
  g.marked[e] = 0;
  std::memcpy(g.data.data() + static_cast<size_t>(e) * g.row_bytes, row, g.row_bytes);
}

void KvRowCache::clear() {
  for (Region& g : regions_) {
    if (g.row_bytes == 0) continue;
    for (int e = 0; e < g.used; ++e) {
      if (g.owner[e] >= 0) g.where[g.owner[e]] = -1;
      g.owner[e] = -1;
      g.marked[e] = 0;
    }
    g.used = 0;
    g.hand = 0;
  }
}

uint64_t KvRowCache::row_bytes_held() const {
  uint64_t n = 0;
  for (const Region& g : regions_) n += static_cast<uint64_t>(g.used) * g.row_bytes;
  return n;
}

uint64_t KvRowCache::row_bytes_full() const {
  uint64_t n = 0;
  for (const Region& g : regions_) n += g.owner.size() * g.row_bytes;
  return n;
}

uint64_t KvRowCache::index_bytes() const {
  uint64_t n = 0;
  for (const Region& g : regions_) n += g.where.size() * sizeof(int32_t);
  return n;
}

}  // namespace fasa
