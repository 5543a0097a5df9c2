// The slow KV tier of FASA-M on a CPU machine: fixed-size rows in a file, written and read with
// direct I/O so the operating system's page cache never holds them. Region r holds rows
// [0, capacity) of row_bytes[r] bytes each, back to back, from a block-aligned file offset.
// Rows are appended in slot order; bytes past the region's last whole block stay in a small RAM
// tail until the block is complete, so every write is whole, aligned blocks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/kv_row_cache.h"

namespace fasa {

struct TierStats {
  uint64_t reads = 0;       // read system calls
  uint64_t read_bytes = 0;  // bytes the device delivered (whole blocks, gaps included)
  uint64_t row_bytes = 0;   // bytes of the rows asked for
  uint64_t read_ns = 0;     // wall time waiting for them (summed over threads; reads of one
                            // selection are in flight together)
  uint64_t writes = 0;
  uint64_t write_bytes = 0;
  uint64_t write_ns = 0;
  // Background reads (prefetch): rows asked for ahead of time, the device bytes that took, and
  // the rows a later read found there (hits; the rest of the prefetched rows were not wanted).
  uint64_t prefetch_rows = 0;
  uint64_t prefetch_read_bytes = 0;  // also counted in read_bytes
  uint64_t prefetch_hits = 0;
  // Rows asked for by reads, and of those the rows the RAM row cache held (no device read).
  uint64_t rows = 0;
  uint64_t cache_hits = 0;
  TierStats operator-(const TierStats& o) const;
};

class KvTier {
 public:
  // Creates an anonymous file (unlinked at once) under `dir`. Throws fasa::Error when the
  // directory is unusable. row_bytes: [n_regions]; a region of 0-byte rows is unused.
  // cache_rows: rows per region of the RAM row cache (kv_row_cache.h; 0: none).
  KvTier(const std::string& dir, const std::vector<size_t>& row_bytes, int capacity,
         int cache_rows = 0);
  ~KvTier();
  KvTier(const KvTier&) = delete;
  KvTier& operator=(const KvTier&) = delete;

  // Writes row `slot` of region r (slots are written in increasing order after reset()).
  void write(int r, int slot, const void* row);
  // Rows [0, n_committed) of every region are final: writes out their whole blocks.
  void flush(int n_committed);
  // Copies rows slots[j] (slots may be null: j) of region r into dst[j * row_bytes], j < n.
  // Slots must be ascending. Rows the row cache holds are copied from it; the rows read from the
  // file join it (not with null slots: a read of every row bypasses the cache). Thread-safe with
  // reads of other regions (one thread per region at a time).
  void read(int r, const int32_t* slots, int n, uint8_t* dst) const;
  // Starts reading rows slots[0..n) of region r (ascending) on a background thread; a later
  // read() of region r copies the rows it finds there instead of reading them again, after
  // waiting for the background read if it is still running (that wait counts as read time).
  // Only rows wholly in the file and not in the row cache are fetched (the others are at hand).
  // One prefetch per region: a newer one replaces an unused older one; read() uses it once.
  // Returns at once.
  void prefetch(int r, const int32_t* slots, int n) const;
  // Waits for every background read; finished ones are kept for read(). flush() calls it, so
  // rows never move between the tail and the file under a background read.
  void finish_prefetches() const;
  // Waits for every background read and forgets its rows (reset() calls it).
  void drop_prefetches() const;
  // Forget every row (the file is reused from slot 0).
  void reset();
  // Reads record I/O errors instead of throwing (they run in parallel loops); this throws
  // fasa::Error for the first one since the last call.
  void check_io() const;

  bool direct_io() const { return direct_; }
  size_t block_bytes() const { return block_; }
  uint64_t file_bytes() const;  // rows written to the file so far (whole blocks)
  // Bytes of rows still held in the RAM tails: the rows' own bytes, like every KV count (the
  // buffers' spare capacity, at most 4 blocks each after a flush, is not KV).
  uint64_t ram_tail_bytes() const;
  // Bytes the row cache holds: its rows, and its index (4 bytes per slot and region).
  uint64_t cache_bytes() const { return cache_.row_bytes_held() + cache_.index_bytes(); }
  // cache_bytes() once the row cache is full.
  uint64_t cache_bytes_full() const { return cache_.row_bytes_full() + cache_.index_bytes(); }
  // The most ram_tail_bytes() reaches between forward calls: under a block per region in use.
  uint64_t tail_bytes_max() const;
  TierStats stats() const;

 private:
  struct Region {
    size_t row_bytes = 0;
    uint64_t file_off = 0;      // block-aligned start of the region in the file
    uint64_t flushed = 0;       // bytes [0, flushed) of the region are in the file
    std::vector<uint8_t> tail;  // bytes [flushed, flushed + tail.size()) of the region
  };
  struct Prefetcher;  // the background reads (kv_tier_prefetch.cpp)
  struct PrefetcherDeleter {
    void operator()(Prefetcher* p) const;
  };
  // read() without the prefetched rows. A background read counts nothing itself: it returns its
  // read calls and device bytes in *bg, charged when the prefetch is used or dropped (on the
  // caller's thread, so per-step deltas of stats() see them).
  struct BackgroundCost {
    uint64_t reads = 0, bytes = 0;
  };
  void read_rows(int r, const int32_t* slots, int n, uint8_t* dst,
                 BackgroundCost* bg = nullptr) const;
  // read() without the row cache: prefetched rows, then the file.
  void read_uncached(int r, const int32_t* slots, int n, uint8_t* dst) const;
  // Copies the rows of a finished prefetch of region r into dst (null when there is none) and
  // returns the indices j whose rows it lacked.
  bool take_prefetched(int r, const int32_t* slots, int n, uint8_t* dst,
                       std::vector<int32_t>& missing) const;
  void pread_all(uint8_t* buf, size_t len, uint64_t off) const;
  void record_error(const std::string& what) const;

  int fd_ = -1;
  bool direct_ = false;
  size_t block_ = 4096;      // file offset and length alignment of direct I/O
  size_t mem_align_ = 4096;  // buffer alignment of direct I/O
  int capacity_ = 0;
  std::vector<Region> regions_;
  mutable std::string error_;  // first read error (guarded by a mutex)
  mutable std::atomic<uint64_t> reads_{0}, read_bytes_{0}, row_bytes_{0}, read_ns_{0};
  uint64_t writes_ = 0, write_bytes_ = 0, write_ns_ = 0;
  mutable std::atomic<uint64_t> prefetch_rows_{0}, prefetch_read_bytes_{0}, prefetch_hits_{0};
  mutable std::atomic<uint64_t> rows_{0}, cache_hits_{0};
  mutable KvRowCache cache_;
  mutable std::unique_ptr<Prefetcher, PrefetcherDeleter>
      prefetcher_;  // started by the first prefetch()
};

}  // namespace fasa
