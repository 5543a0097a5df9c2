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
  const uint8_t* k_rows(int kv_head) const override { return k_.get() + head_offset(kv_head); }
  const uint8_t* v_rows(int kv_head) const override { return v_.get() + head_offset(kv_head); }
  uint64_t ram_bytes(int n_used) const override;
  // Becomes a copy of src's first min(n_used, rows) rows of every head (same kind and size).
  void copy_from(const KvPlainStore& src, int n_used);

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
  // [n_kv_heads, rows, row_bytes] (pages untouched until written)
  std::unique_ptr<uint8_t[]> k_;
  std::unique_ptr<uint8_t[]> v_;  // same
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
