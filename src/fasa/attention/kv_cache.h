// Per-sequence KV cache: the slots used, their positions, and one store per layer
// (kv_layer_store.h) that holds the rows. Rows are contiguous per (layer, kv_head): a policy or
// kernel that reads a head's keys walks one dense [capacity, head_dim] array. Slot (row index)
// and pos (the token position, the RoPE angle) are kept apart: they differ once anything is
// evicted.
//
// Stores: a global layer's rows are a KvPlainStore; sliding-window layers (shape.window(layer) >
// 0) keep a KvRingStore of layer_capacity(layer) = min(capacity, window + max_batch - 1) rows
// instead: slot s lives in row s % layer_capacity, so their memory stays constant however long
// the sequence grows, and a forward call of up to max_batch tokens never overwrites a row one of
// its own queries still reads; FASA-M's offloaded layers are KvTieredStores over one file tier.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/kv_layer_store.h"
#include "fasa/attention/kv_tier.h"
#include "fasa/attention/kv_tiered_store.h"
#include "fasa/core/error.h"
#include "fasa/kernels/kv_rows.h"

namespace fasa {

struct AttnShape {
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  std::vector<int> layer_window;  // [n_layers] sliding window, 0 = global; empty = all global
  int n_group() const { return n_heads / n_kv_heads; }
  int window(int layer) const { return layer_window.empty() ? 0 : layer_window[layer]; }
  // The global (full-attention) layers, ascending: every layer of a model without sliding
  // windows. Only these are policy-driven (a sliding-window layer's window is its selection).
  std::vector<int> global_layers() const {
    std::vector<int> g;
    for (int l = 0; l < n_layers; ++l) {
      if (window(l) == 0) g.push_back(l);
    }
    return g;
  }
};

// How a cache splits its rows between RAM and a file-backed tier (FASA-M). In an offloaded
// layer, each kv head keeps the listed K dims ("hot") in RAM, packed [n_hot, capacity]; the other
// K dims and all of V go to a file under `dir` (direct I/O). Other layers stay whole in RAM.
struct KvTiering {
  std::string dir;
  std::vector<char> offload_layer;         // [n_layers] 1 = offloaded
  std::vector<std::vector<int>> hot_dims;  // [n_layers * n_kv_heads] ascending K dims
  // Decode reads in the background the rows each layer's selection ranked just past its budget
  // (Selection::next), for that layer's next step (KvCache::prefetch); rows the next step does
  // not select cost device bytes.
  bool prefetch = false;
  // Rows per (layer, kv head) of the RAM cache of recently read file-tier rows (KvRowCache;
  // 0: none; a value in (0, 1): that fraction of the cache's capacity): a decode step reads from
  // the file only the rows recent steps did not select.
  double cache_rows = 0.0;
};

class KvCache {
 public:
  // max_batch: the most tokens one forward call appends (sizes the sliding-window rings);
  // 0 = capacity.
  KvCache(const AttnShape& shape, KvType type, int capacity, const KvTiering* tiering = nullptr,
          int max_batch = 0);

  const AttnShape& shape() const { return shape_; }
  KvType type() const { return type_; }
  int capacity() const { return capacity_; }
  int n_used() const { return n_used_; }
  int max_batch() const { return max_batch_; }
  // Bytes of one K (or V) row: head_dim * 2 (f16), * 4 (f32), head_dim / 32 * 34 (q8_0).
  size_t row_bytes() const { return row_bytes_; }
  // Bytes of one value: f16 and f32 only (a Q8_0 value has no bytes of its own).
  size_t elem_bytes() const {
    FASA_CHECK(type_ != KvType::Q8_0);
    return type_ == KvType::F16 ? 2 : 4;
  }
  // Rows a layer holds: capacity, or the ring size of a sliding-window layer.
  int layer_capacity(int layer) const { return layer_cap_[layer]; }
  // The row of `slot` in `layer` (slot % ring size in a sliding-window layer).
  int row_of(int layer, int slot) const {
    return shape_.window(layer) > 0 ? slot % layer_cap_[layer] : slot;
  }
  // Bytes of K+V rows written so far (for every layer, and one layer).
  uint64_t used_bytes() const;
  uint64_t layer_used_bytes(int layer) const;
  // used_bytes() of the sliding-window layers (windowed = true) or of the global ones.
  uint64_t used_bytes_of(bool windowed) const;
  uint64_t capacity_bytes() const;

  // [layer_capacity] rows of row_bytes() for (layer, kv_head); only for layers kept in RAM. Slot s of a sliding-window layer is row row_of(layer, s).
  const void* k_rows(int layer, int kv_head) const {
    FASA_CHECK(!offloaded(layer));
    return stores_[layer]->k_rows(kv_head);
  }
  const void* v_rows(int layer, int kv_head) const {
    FASA_CHECK(!offloaded(layer));
    return stores_[layer]->v_rows(kv_head);
  }

  // Tiering (FASA-M). offloaded(layer) layers have no k_rows/v_rows: read them with gather().
  bool offloaded(int layer) const { return stores_[layer]->tiered() != nullptr; }
  bool tiered() const { return tier_ != nullptr; }
  // [hot_dims.size(), capacity] packed hot K dims of an offloaded (layer, kv_head), column-major:
  // dim hot_dims[i] of slot t is element i * capacity + t. f16/f32: values of the cache's type;
  // q8_0: int8 codes of one scale per slot, hot_scales() (the packed slice FASA reads, see
  // pack_hot_q8 below); the file tier then holds whole K rows.
  const void* hot_rows(int layer, int kv_head) const { return tiered(layer).hot_rows(kv_head); }
  // [capacity] fp16 scales of a q8_0 cache's hot slice.
  const uint16_t* hot_scales(int layer, int kv_head) const {
    FASA_CHECK(type_ == KvType::Q8_0);
    return tiered(layer).hot_scales(kv_head);
  }
  // The hot K dims of an offloaded (layer, kv_head); none in a layer kept in RAM.
  const std::vector<int>& hot_dims(int layer, int kv_head) const {
    static const std::vector<int> kNone;
    const KvTieredStore* t = stores_[layer]->tiered();
    return t ? t->hot_dims(kv_head) : kNone;
  }
  // Copies rows slots[j] (or j when slots is null), j < n, of (layer, kv_head) into k and v:
  // [n] rows of row_bytes() each, bit-identical to what was stored. Slots ascending.
  // Thread-safe; I/O errors surface through check_io().
  void gather(int layer, int kv_head, const int32_t* slots, int n, uint8_t* k, uint8_t* v) const;
  void check_io() const;
  // FASA-M: starts reading rows slots[0..n) (ascending) of (layer, kv_head) of an offloaded
  // layer in the background, if the tiering asked for prefetch (KvTier::prefetch); a later
  // gather() copies the rows found there. No effect on a RAM layer.
  void prefetch(int layer, int kv_head, const int32_t* slots, int n) const;
  TierStats tier_stats() const { return tier_ ? tier_->stats() : TierStats{}; }
  // Of ram_bytes(): FASA-M's RAM row cache (its rows and index; KvTier::cache_bytes).
  uint64_t row_cache_bytes() const { return tier_ ? tier_->cache_bytes() : 0; }
  // Bytes of KV held in RAM (rows of RAM layers, hot slices, file tails) and in the file.
  uint64_t ram_bytes() const;
  // The most ram_bytes() reaches between forward calls: every slot used, FASA-M's row cache full
  // and its file tails under a block each (Session checks that the machine has it).
  uint64_t ram_bytes_full() const;
  uint64_t file_bytes() const { return tier_ ? tier_->file_bytes() : 0; }
  bool direct_io() const { return tier_ && tier_->direct_io(); }
  // The file tier's block: it writes whole blocks, so file_bytes() is a multiple of it (0: none).
  uint64_t tier_block_bytes() const { return tier_ ? tier_->block_bytes() : 0; }

  // Writes one token's K and V for (layer, kv_head) at `slot` (may be >= n_used until commit;
  // sliding-window layers write row row_of(layer, slot)).
  void store(int layer, int kv_head, int slot, const float* k, const float* v);  // k, v: [head_dim]
  // Writes rows [first, first + n) of a RAM layer's kv_head as given (k, v: [n] rows of
  // row_bytes(); a sliding-window layer's rows, not slots): a saved prefix coming back
  // (engine/prompt_file.h). Throws fasa::Error for an offloaded layer.
  void write_rows(int layer, int kv_head, int first, int n, const void* k, const void* v);
  // Makes slots [n_used, n_used + n) visible with positions pos[0..n).
  void commit(int n, const int32_t* pos);
  int32_t pos_of(int slot) const { return pos_[slot]; }
  // Becomes a copy of src's rows and positions (same shape, type and capacity; plain caches
  // only: throws fasa::Error for a tiered one).
  void copy_from(const KvCache& src) { copy_prefix_from(src, src.n_used()); }
  // The same for src's first n slots (0 <= n <= src.n_used()): this cache then holds n slots,
  // their rows and positions exactly as src's. A sliding-window layer's ring holds only the
  // last rows src wrote, so a query at slot >= n finds its whole window only when src wrote at
  // most max_batch() slots past n (as truncate): can_copy_prefix says whether n qualifies;
  // copy_prefix_from throws fasa::Error when it does not, or for a tiered cache, another shape,
  // or a source whose evicted rows were freed.
  void copy_prefix_from(const KvCache& src, int n);
  // Throws the fasa::Error copy_prefix_from would, without copying anything.
  void check_copy_prefix(const KvCache& src, int n) const;
  bool can_copy_prefix(const KvCache& src, int n) const;
  // Drops everything (slots reused from 0).
  void clear();
  // Drops slots [n, n_used) (0 <= n <= n_used): they are written again by the next stores
  // (lossless decoding's rejected drafts). Plain caches only: a tiered cache's file holds whole
  // blocks (throws fasa::Error). In a sliding-window layer the rows of the dropped slots may
  // have overwritten older slots' rows: a query at slot s >= n still finds every row of its
  // window as long as at most max_batch() slots were written past n.
  void truncate(int n);

  // Eviction (an eviction policy's rows gone for good, Session::free_evicted): of (layer,
  // kv_head)'s slots below `horizon`, only `kept` (ascending) remain. A global layer kept in RAM
  // only. The rows are freed (KvPlainStore::evict: kept rows move down, the hole's pages go back
  // to the OS) once at least evict_batch(kept.size()) more rows are gone than at the last
  // eviction, so the moves cost at most 8 row copies per freed row; until then nothing changes.
  // With `now`, at least one. Readers then find a slot's row with rows_of (the attention driver, the policies that read
  // keys). Returns whether it freed now. copy_from refuses a source that has freed rows; clear()
  // forgets them; truncate() refuses to cut below a freed row.
  // `now`: free whatever is gone regardless of the batch (before a prefill, which must see
  // exactly what is kept).
  bool evict(int layer, int kv_head, const std::vector<int32_t>& kept, int horizon,
             bool now = false);
  static int evict_batch(size_t n_kept) { return std::max<int>(1, static_cast<int>(n_kept / 8)); }
  // Whether (layer, kv_head) has freed rows: then its rows are not in slot order below
  // evict_horizon, and every reader must map slots to rows with rows_of.
  bool evicted(int layer, int kv_head) const {
    const KvPlainStore* p = plain(layer);
    return p && p->evicted(kv_head);
  }
  bool any_evicted() const { return any_evicted_; }
  // rows[j] = the row of slots[j] in k_rows/v_rows, j < n (ascending; none freed).
  void rows_of(int layer, int kv_head, const int32_t* slots, int n, int32_t* rows) const;
  // The freed (layer, kv_head)'s slots below evict_horizon that remain, in rows [0, size).
  const std::vector<int32_t>& kept(int layer, int kv_head) const {
    return plain(layer)->kept(kv_head);
  }
  int evict_horizon(int layer, int kv_head) const {
    const KvPlainStore* p = plain(layer);
    return p ? p->evict_horizon(kv_head) : 0;
  }
  // K/V row pairs freed, over every layer and head.
  uint64_t freed_rows() const;
  // Pages of (layer, kv_head)'s K rows [lo, hi) resident in RAM (tests: freed pages are gone).
  size_t resident_k_pages(int layer, int kv_head, int lo, int hi) const;

 private:
  // The plain store of a global layer kept in RAM, or null.
  const KvPlainStore* plain(int layer) const {
    if (shape_.window(layer) > 0 || offloaded(layer)) return nullptr;
    return static_cast<const KvPlainStore*>(stores_[layer].get());
  }
  const KvTieredStore& tiered(int layer) const {
    const KvTieredStore* t = stores_[layer]->tiered();
    FASA_CHECK(t != nullptr);
    return *t;
  }
  AttnShape shape_;
  KvType type_;
  size_t row_bytes_;
  int capacity_;
  int max_batch_;
  int n_used_ = 0;
  std::vector<int> layer_cap_;    // [n_layers] rows per (layer, kv_head)
  std::vector<int32_t> pos_;      // [capacity]
  std::unique_ptr<KvTier> tier_;  // FASA-M's file, when asked for: region = layer * n_kv_heads +
                                  // kv_head (declared before the stores, which point at it)
  bool prefetch_ = false;         // KvTiering::prefetch
  bool any_evicted_ = false;      // some store freed rows (evict)
  std::vector<std::unique_ptr<KvLayerStore>> stores_;  // [n_layers]
};

}  // namespace fasa
