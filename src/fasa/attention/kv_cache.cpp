#include "fasa/attention/kv_cache.h"

#include <algorithm>
#include <cmath>

#include "fasa/core/error.h"
#include "fasa/kernels/q8_0.h"

namespace fasa {

KvCache::KvCache(const AttnShape& shape, KvType type, int capacity, const KvTiering* tiering,
                 int max_batch)
    : shape_(shape),
      type_(type),
      row_bytes_(kv_row_bytes(type, shape.head_dim)),
      capacity_(capacity),
      max_batch_(max_batch > 0 ? std::min(max_batch, capacity) : capacity),
      pos_(static_cast<size_t>(capacity)) {
  FASA_CHECK(capacity > 0 && shape.n_kv_heads > 0 && shape.head_dim > 0);
  if (type == KvType::Q8_0 && shape.head_dim % kQ8Block != 0) {
    fail(
        "KV type q8_0 stores blocks of {} values: it needs a head_dim that is a multiple of {}, "
        "and this model's head_dim is {} (use --kv-type f16)",
        kQ8Block, kQ8Block, shape.head_dim);
  }
  FASA_CHECK(shape.layer_window.empty() ||
             static_cast<int>(shape.layer_window.size()) == shape.n_layers);
  const int n_kv = shape.n_kv_heads, hd = shape.head_dim;
  if (tiering) {
    FASA_CHECK(static_cast<int>(tiering->offload_layer.size()) == shape.n_layers &&
               tiering->hot_dims.size() == static_cast<size_t>(shape.n_layers) * n_kv);
    // One file region per (layer, kv head); RAM layers' regions stay empty.
    std::vector<size_t> region_row_bytes(tiering->hot_dims.size(), 0);
    for (int l = 0; l < shape.n_layers; ++l) {
      if (!tiering->offload_layer[l]) continue;
      FASA_CHECK(shape.window(l) == 0);  // only global layers are offloaded
      for (int g = 0; g < n_kv; ++g) {
        const size_t r = static_cast<size_t>(l) * n_kv + g;
        region_row_bytes[r] = KvTieredStore::tier_row_bytes(type, hd, tiering->hot_dims[r].size());
      }
    }
    const double c = tiering->cache_rows;
    const int cache_rows = c < 1.0 ? static_cast<int>(std::ceil(c * capacity))
                                   : static_cast<int>(std::min<double>(c, capacity));
    tier_ = std::make_unique<KvTier>(tiering->dir, region_row_bytes, capacity, cache_rows);
    prefetch_ = tiering->prefetch;
  }
  layer_cap_.assign(shape.n_layers, capacity);
  stores_.resize(shape.n_layers);
  for (int l = 0; l < shape.n_layers; ++l) {
    if (const int w = shape.window(l); w > 0) {
      // A ring: the window, plus room for one forward call's new rows.
      layer_cap_[l] = static_cast<int>(std::min<int64_t>(capacity, int64_t{w} + max_batch_ - 1));
      stores_[l] = std::make_unique<KvRingStore>(type, hd, n_kv, layer_cap_[l]);
    } else if (tiering && tiering->offload_layer[l]) {
      const auto first = tiering->hot_dims.begin() + static_cast<ptrdiff_t>(l) * n_kv;
      stores_[l] =
          std::make_unique<KvTieredStore>(type, hd, capacity,
                                          std::vector<std::vector<int>>(first, first + n_kv),
                                          tier_.get(), l * n_kv);
    } else {
      stores_[l] = std::make_unique<KvPlainStore>(type, hd, n_kv, capacity);
    }
  }
}

void KvCache::prefetch(int layer, int kv_head, const int32_t* slots, int n) const {
  if (!prefetch_ || !offloaded(layer)) return;
  tier_->prefetch(layer * shape_.n_kv_heads + kv_head, slots, n);
}

bool KvCache::can_copy_prefix(const KvCache& src, int n) const {
  if (n < 0 || n > src.n_used_) return false;
  for (int l = 0; l < shape_.n_layers; ++l) {
    const bool wraps = shape_.window(l) > 0 && src.layer_cap_[l] < src.capacity_;
    if (wraps && src.n_used_ - n > src.max_batch_) return false;
  }
  return true;
}

void KvCache::copy_prefix_from(const KvCache& src, int n) {
  check_copy_prefix(src, n);
  for (int l = 0; l < shape_.n_layers; ++l) {
    // Neither cache is tiered: every store is a plain one or a ring of the same size. A ring
    // is copied whole (its rows past the prefix are written again before any query reads them).
    const int rows = shape_.window(l) > 0 ? src.n_used_ : n;
    static_cast<KvPlainStore&>(*stores_[l])
        .copy_from(static_cast<const KvPlainStore&>(*src.stores_[l]), rows);
  }
  std::copy(src.pos_.begin(), src.pos_.begin() + n, pos_.begin());
  n_used_ = n;
  any_evicted_ = false;  // the plain stores' copy_from forgot this cache's evictions
}

void KvCache::check_copy_prefix(const KvCache& src, int n) const {
  if (tier_ || src.tier_) fail("a tiered (FASA-M) KV cache cannot be copied");
  if (src.type_ != type_ || src.capacity_ != capacity_ || src.shape_.n_layers != shape_.n_layers ||
      src.shape_.n_kv_heads != shape_.n_kv_heads || src.shape_.head_dim != shape_.head_dim ||
      src.layer_cap_ != layer_cap_) {
    fail("cannot copy a KV cache of another shape, type, capacity or batch size");
  }
  if (src.any_evicted_) {
    fail("cannot copy a KV cache whose evicted rows were freed: copy it before decoding");
  }
  if (!can_copy_prefix(src, n)) {
    fail(
        "cannot copy the first {} of {} slots: a sliding-window layer's ring no longer holds "
        "the rows their window reads (at most {} slots past the prefix)",
        n, src.n_used_, src.max_batch_);
  }
}

void KvCache::clear() {
  n_used_ = 0;
  if (tier_) tier_->reset();
  if (any_evicted_) {
    for (int l = 0; l < shape_.n_layers; ++l) {
      if (plain(l)) static_cast<KvPlainStore&>(*stores_[l]).clear_evictions();
    }
    any_evicted_ = false;
  }
}

void KvCache::truncate(int n) {
  if (tier_) fail("a tiered KV cache (FASA-M) cannot be cut back: its file holds whole blocks");
  FASA_CHECK(n >= 0 && n <= n_used_);
  for (int l = 0; any_evicted_ && l < shape_.n_layers; ++l) {
    for (int g = 0; g < shape_.n_kv_heads; ++g) {
      if (n < evict_horizon(l, g)) fail("cannot cut a KV cache back below a freed (evicted) row");
    }
  }
  n_used_ = n;
}

bool KvCache::evict(int layer, int kv_head, const std::vector<int32_t>& kept, int horizon,
                    bool now) {
  const KvPlainStore* p = plain(layer);
  FASA_CHECK(p != nullptr && horizon <= n_used_);
  const int gone = horizon - static_cast<int>(kept.size());
  const int gone_before =
      p->evicted(kv_head) ? p->evict_horizon(kv_head) - static_cast<int>(p->kept(kv_head).size())
                          : 0;
  if (gone - gone_before < (now ? 1 : evict_batch(kept.size()))) return false;
  static_cast<KvPlainStore&>(*stores_[layer]).evict(kv_head, kept, horizon);
  any_evicted_ = true;
  return true;
}

void KvCache::rows_of(int layer, int kv_head, const int32_t* slots, int n, int32_t* rows) const {
  const KvPlainStore* p = plain(layer);
  if (p) {
    p->rows_of(kv_head, slots, n, rows);
    return;
  }
  for (int j = 0; j < n; ++j) rows[j] = row_of(layer, slots[j]);
}

uint64_t KvCache::freed_rows() const {
  uint64_t n = 0;
  for (int l = 0; any_evicted_ && l < shape_.n_layers; ++l) {
    if (const KvPlainStore* p = plain(l)) n += p->freed_rows();
  }
  return n;
}

size_t KvCache::resident_k_pages(int layer, int kv_head, int lo, int hi) const {
  const KvPlainStore* p = plain(layer);
  FASA_CHECK(p != nullptr);
  return p->resident_k_pages(kv_head, lo, hi);
}

uint64_t KvCache::ram_bytes() const {
  uint64_t n = 0;
  for (const auto& s : stores_) n += s->ram_bytes(n_used_);
  return tier_ ? n + tier_->ram_tail_bytes() + tier_->cache_bytes() : n;
}

uint64_t KvCache::ram_bytes_full() const {
  uint64_t n = 0;
  for (int l = 0; l < shape_.n_layers; ++l) n += stores_[l]->ram_bytes(capacity_);
  return tier_ ? n + tier_->cache_bytes_full() + tier_->tail_bytes_max() : n;
}

void KvCache::check_io() const {
  if (tier_) tier_->check_io();
}

void KvCache::gather(int layer, int kv_head, const int32_t* slots, int n, uint8_t* k,
                     uint8_t* v) const {
  stores_[layer]->gather(kv_head, slots, n, k, v);
}

uint64_t KvCache::layer_used_bytes(int layer) const {
  return 2ull * shape_.n_kv_heads * static_cast<uint64_t>(std::min(n_used_, layer_cap_[layer])) *
         row_bytes_;
}

uint64_t KvCache::used_bytes_of(bool windowed) const {
  uint64_t n = 0;
  for (int l = 0; l < shape_.n_layers; ++l) {
    if ((shape_.window(l) > 0) == windowed) n += layer_used_bytes(l);
  }
  return n;
}

uint64_t KvCache::used_bytes() const {
  uint64_t n = 0;
  for (int l = 0; l < shape_.n_layers; ++l) n += layer_used_bytes(l);
  return n;
}

uint64_t KvCache::capacity_bytes() const {
  uint64_t n = 0;
  for (int l = 0; l < shape_.n_layers; ++l) {
    n += 2ull * shape_.n_kv_heads * static_cast<uint64_t>(layer_cap_[l]) * row_bytes_;
  }
  return n;
}

void KvCache::store(int layer, int kv_head, int slot, const float* k, const float* v) {
  FASA_DCHECK(slot >= 0 && slot < capacity_);
  stores_[layer]->store(kv_head, slot, k, v);
}

void KvCache::write_rows(int layer, int kv_head, int first, int n, const void* k, const void* v) {
  if (offloaded(layer)) fail("a tiered (FASA-M) KV cache's rows cannot be written back");
  static_cast<KvPlainStore&>(*stores_[layer]).write_rows(kv_head, first, n, k, v);
}

void KvCache::commit(int n, const int32_t* pos) {
  FASA_CHECK(n >= 0 && n_used_ + n <= capacity_);
  for (int i = 0; i < n; ++i) pos_[n_used_ + i] = pos[i];
  n_used_ += n;
  if (tier_) tier_->flush(n_used_);
}

}  // namespace fasa
