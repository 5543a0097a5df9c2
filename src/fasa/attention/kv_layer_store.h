// Where one layer's K and V rows live: the three storage kinds of a KvCache (kv_cache.h), behind
// one interface. Every kind keeps exactly the bits written (rows of the cache's KvType); they
// differ only in place and extent:
//   - KvPlainStore:  [n_kv_heads, capacity] rows in RAM (a global layer);
//   - KvRingStore:   [n_kv_heads, ring] rows in RAM, slot s at row s % ring (a sliding-window
//                    layer: its memory stays constant however long the sequence grows);
//   - KvTieredStore: FASA-M, in kv_tiered_store.h: the hot K dims packed in RAM, the rest in a
//                    file tier.
// KvCache picks one per layer and keeps the per-sequence state (slots used, positions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "fasa/core/page_buffer.h"
#include "fasa/kernels/kv_rows.h"

namespace fasa {

class KvTieredStore;

class KvLayerStore {
 public:
  virtual ~KvLayerStore() = default;
  // Writes one token's K and V (each [head_dim] fp32) for kv_head at `slot` (converted to the
  // cache's type).
  virtual void store(int kv_head, int slot, const float* k, const float* v) = 0;
  // Copies rows slots[j] (or j when slots is null), j < n, of kv_head into k and v: [n] rows of
  // kv_row_bytes each, bit-identical to what was stored. Slots ascending.
  virtual void gather(int kv_head, const int32_t* slots, int n, uint8_t* k, uint8_t* v) const = 0;
  // [rows] K (V) rows of kv_head when they are in RAM, else null.
  virtual const uint8_t* k_rows(int kv_head) const = 0;
  virtual const uint8_t* v_rows(int kv_head) const = 0;
  // Bytes held in RAM once `n_used` slots are written.
  virtual uint64_t ram_bytes(int n_used) const = 0;
  // The FASA-M store, or null.
  virtual const KvTieredStore* tiered() const { return nullptr; }
};

// Rows in RAM: the plain store, and the ring (ring > 0) as a KvRingStore.
class KvPlainStore : public KvLayerStore {
 public:
  KvPlainStore(KvType type, int head_dim, int n_kv_heads, int rows)
      : KvPlainStore(type, head_dim, n_kv_heads, rows, /*ring=*/false) {}

  int rows() const { return rows_; }
  int row_of(int slot) const { return ring_ ? slot % rows_ : slot; }
  void store(int kv_head, int slot, const float* k, const float* v) override;
  void gather(int kv_head, const int32_t* slots, int n, uint8_t* k, uint8_t* v) const override;
  const uint8_t* k_rows(int kv_head) const override { return k_.data() + head_offset(kv_head); }
  const uint8_t* v_rows(int kv_head) const override { return v_.data() + head_offset(kv_head); }
  uint64_t ram_bytes(int n_used) const override;
  // Becomes a copy of src's first min(n_used, rows) rows of every head (same kind and size;
  // src has evicted nothing).
  void copy_from(const KvPlainStore& src, int n_used);
  // Writes rows [first, first + n) of kv_head as given: k, v [n] rows of row bytes each (a
  // saved prefix, engine/prompt_file.h). Nothing evicted.
  void write_rows(int kv_head, int first, int n, const void* k, const void* v);

  // Eviction (a global layer's plain store): of kv_head's slots below `horizon`, only `kept`
  // (ascending) remain; the others are gone for good. Their rows are freed: the kept rows move
  // down to rows [0, kept.size()) in slot order, and the pages wholly inside rows
  // [kept.size(), horizon) go back to the OS. Slots >= horizon stay in their rows (row = slot).
  // A gone slot stays gone and the horizon never moves back (checked). Returns the rows moved.
  int evict(int kv_head, const std::vector<int32_t>& kept, int horizon);
  // The rows of slots[j], j < n (ascending, none gone): row = slot unless kv_head evicted.
  void rows_of(int kv_head, const int32_t* slots, int n, int32_t* rows) const;
  bool evicted(int kv_head) const { return !ev_.empty() && ev_[kv_head].horizon > 0; }
  // The slots below evict_horizon(kv_head) still held (rows [0, size)), ascending.
  const std::vector<int32_t>& kept(int kv_head) const { return ev_[kv_head].kept; }
  int evict_horizon(int kv_head) const { return ev_.empty() ? 0 : ev_[kv_head].horizon; }
  // Rows freed over all heads (each a K and a V row).
  uint64_t freed_rows() const;
  // Forgets every eviction (the cache was cleared: rows are written again from slot 0).
  void clear_evictions() { ev_.clear(); }
  // Pages of kv_head's K rows resident in RAM (PageBuffer::resident_pages), rows [lo, hi).
  size_t resident_k_pages(int kv_head, int lo, int hi) const;

 protected:
  KvPlainStore(KvType type, int head_dim, int n_kv_heads, int rows, bool ring);

 private:
  size_t head_offset(int kv_head) const {
    return static_cast<size_t>(kv_head) * rows_ * row_bytes_;
  }
  KvType type_;
  int head_dim_;
  int n_kv_heads_;
  int rows_;
  bool ring_;
  size_t row_bytes_;
  struct Evicted {
    int horizon = 0;            // slots below it are kept[] or gone
    std::vector<int32_t> kept;  // [n_kept] ascending slots, kept[i] in row i
  };
  // [n_kv_heads, rows, row_bytes] (pages untouched until written)
  PageBuffer k_;
  PageBuffer v_;             // same
  std::vector<Evicted> ev_;  // [n_kv_heads] once anything was evicted, else empty
};

// A sliding-window layer's ring: the window plus room for one forward call's new rows, so a
// call never overwrites a row one of its own queries still reads.
class KvRingStore final : public KvPlainStore {
 public:
  KvRingStore(KvType type, int head_dim, int n_kv_heads, int ring)
      : KvPlainStore(type, head_dim, n_kv_heads, ring, /*ring=*/true) {}
};

// Row encoding shared by the stores: `x` ([head_dim] fp32) as one row of `type` at `out`
// (kv_row_bytes(type, head_dim) bytes).
void encode_kv_row(KvType type, int head_dim, const float* x, uint8_t* out);

}  // namespace fasa
