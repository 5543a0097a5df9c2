// FASA-M's RAM cache of file-tier rows. Consecutive decode steps of one layer select mostly the
// same tokens, so each (layer, kv head) region keeps copies of the rows its recent steps read and
// a step asks the device only for the rows its predecessors did not select. Eviction is CLOCK
// (second chance): a row found again is marked, and the hand passes marked rows once before it
// evicts them. Only final rows are cached (rows in the file: they never change until the tier is
// reset), so a copy is never stale.
//
// Each region is touched by one thread at a time (decode fetches one job per kv head).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fasa {

class KvRowCache {
 public:
  // row_bytes: [n_regions] (0: an unused region); rows_per_region: the cache's rows per region
  // (0: no cache); capacity: the slots a region can hold.
  KvRowCache(const std::vector<size_t>& row_bytes, int rows_per_region, int capacity);

  bool enabled() const { return rows_ > 0; }
  // Copies the cached rows among slots[0..n) (null slots: j) of region r into dst[j * row_bytes]
  // and marks them; appends the indices j of the others to `missing`. Returns the rows found.
  int lookup(int r, const int32_t* slots, int n, uint8_t* dst, std::vector<int32_t>& missing);
  bool holds(int r, int32_t slot) const { return rows_ > 0 && regions_[r].where[slot] >= 0; }
  // Caches row `slot` of region r (already cached: nothing), evicting by CLOCK when full.
  void insert(int r, int32_t slot, const uint8_t* row);
  // Forgets every row (the tier was reset).
  void clear();
  // The rows' bytes held now, and the index's (4 bytes per slot of a region with a cache).
  uint64_t row_bytes_held() const;
  uint64_t index_bytes() const;
  // row_bytes_held() once every region's cache is full.
  uint64_t row_bytes_full() const;

 private:
  struct Region {
    size_t row_bytes = 0;
    std::vector<int32_t> where;   // [capacity] entry of each slot, -1: not cached
    std::vector<int32_t> owner;   // [rows] slot held by each entry, -1: free
    std::vector<uint8_t> marked;  // [rows] found again since the hand last passed
    std::vector<uint8_t> data;    // [rows, row_bytes]
    int used = 0;                 // entries ever filled (free ones are [used, rows))
    int hand = 0;
  };
  int victim(Region& g);
  int rows_;
  int capacity_;
  std::vector<Region> regions_;
};

}  // namespace fasa
