#include "fasa/attention/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/kernels/q8_0.h"

namespace fasa {

void pack_hot_q8(const uint8_t* k_row, const int* dims, int n, int8_t* q, size_t stride,
                 uint16_t* d) {
  thread_local std::vector<float> x;  // [n] the dims' stored values
  x.resize(n);
  for (int i = 0; i < n; ++i) x[i] = q8_0_value(k_row, dims[i]);
  *d = q8_quantize(x.data(), n, q, stride);
}

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
    fail("KV type q8_0 stores blocks of {} values: it needs a head_dim that is a multiple of {}, "
         "and this model's head_dim is {} (use --kv-type f16)", kQ8Block, kQ8Block,
         shape.head_dim);
  }
  FASA_CHECK(shape.layer_window.empty() ||
             static_cast<int>(shape.layer_window.size()) == shape.n_layers);
  ram_index_.assign(shape.n_layers, -1);
  layer_cap_.assign(shape.n_layers, capacity);
  layer_base_.assign(shape.n_layers, 0);
  size_t n = 0;  // bytes of K (and of V) over the RAM layers
  for (int l = 0; l < shape.n_layers; ++l) {
    const int w = shape.window(l);
    if (w > 0) {
      // A ring: the window, plus room for one forward call's new rows.
      layer_cap_[l] = static_cast<int>(std::min<int64_t>(capacity, int64_t{w} + max_batch_ - 1));
      FASA_CHECK(!tiering || !tiering->offload_layer[l]);  // only global layers are offloaded
    }
    if (!tiering || !tiering->offload_layer[l]) {
      ram_index_[l] = n_ram_layers_++;
      layer_base_[l] = n;
      n += static_cast<size_t>(shape.n_kv_heads) * layer_cap_[l] * row_bytes_;
    }
  }
  k_.reset(new uint8_t[n]);
  v_.reset(new uint8_t[n]);
  if (!tiering) return;
  FASA_CHECK(static_cast<int>(tiering->offload_layer.size()) == shape.n_layers &&
             tiering->hot_dims.size() == static_cast<size_t>(shape.n_layers) * shape.n_kv_heads);
  const bool q8 = type_ == KvType::Q8_0;
  const size_t nr = tiering->hot_dims.size(), eb = q8 ? 1 : elem_bytes();
  hot_dims_.resize(nr);
  cold_dims_.resize(nr);
  hot_.resize(nr);
  if (q8) hot_scale_.resize(nr);
  std::vector<size_t> row_bytes(nr, 0);
  for (int l = 0; l < shape.n_layers; ++l) {
    if (ram_index_[l] >= 0) continue;
    for (int g = 0; g < shape.n_kv_heads; ++g) {
      const size_t r = hot_index(l, g);
      hot_dims_[r] = tiering->hot_dims[r];
      std::vector<char> hot(shape.head_dim, 0);
      for (int d : hot_dims_[r]) {
        FASA_CHECK(d >= 0 && d < shape.head_dim);
        hot[d] = 1;
      }
      for (int d = 0; d < shape.head_dim; ++d) {
        if (!hot[d]) cold_dims_[r].push_back(d);
      }
      hot_[r].reset(new uint8_t[static_cast<size_t>(capacity) * hot_dims_[r].size() * eb + 1]);
      if (q8) {  // the hot slice is a copy; the file keeps whole rows (Q8_0 blocks stay whole)
        hot_scale_[r].reset(new uint16_t[capacity]);
        row_bytes[r] = 2 * row_bytes_;
      } else {
        row_bytes[r] = (cold_dims_[r].size() + shape.head_dim) * eb;
      }
    }
  }
  tier_ = std::make_unique<KvTier>(tiering->dir, row_bytes, capacity);
  prefetch_ = tiering->prefetch;
}

void KvCache::prefetch(int layer, int kv_head, const int32_t* slots, int n) const {
  if (!prefetch_ || !offloaded(layer)) return;
  tier_->prefetch(static_cast<int>(hot_index(layer, kv_head)), slots, n);
}

int KvCache::next_offloaded(int layer) const {
  for (int l = layer + 1; l < shape_.n_layers; ++l) {
    if (offloaded(l)) return l;
  }
  return -1;
}

void KvCache::copy_from(const KvCache& src) {
  if (tier_ || src.tier_) fail("a tiered (FASA-M) KV cache cannot be copied");
  if (src.type_ != type_ || src.capacity_ != capacity_ || src.shape_.n_layers != shape_.n_layers ||
      src.shape_.n_kv_heads != shape_.n_kv_heads || src.shape_.head_dim != shape_.head_dim ||
      src.layer_cap_ != layer_cap_) {
    fail("cannot copy a KV cache of another shape, type, capacity or batch size");
  }
  for (int l = 0; l < shape_.n_layers; ++l) {
    const size_t bytes =
        static_cast<size_t>(std::min(src.n_used_, layer_cap_[l])) * row_bytes_;
    for (int g = 0; g < shape_.n_kv_heads; ++g) {
      std::memcpy(k_.get() + row_offset(l, g, 0), src.k_.get() + src.row_offset(l, g, 0), bytes);
      std::memcpy(v_.get() + row_offset(l, g, 0), src.v_.get() + src.row_offset(l, g, 0), bytes);
    }
  }
  std::copy(src.pos_.begin(), src.pos_.begin() + src.n_used_, pos_.begin());
  n_used_ = src.n_used_;
}

void KvCache::clear() {
  n_used_ = 0;
  if (tier_) tier_->reset();
}

uint64_t KvCache::ram_bytes() const {
  uint64_t n = 0;
  for (int l = 0; l < shape_.n_layers; ++l) {
    if (ram_index_[l] >= 0) n += layer_used_bytes(l);
  }
  if (!tier_) return n;
  for (const std::vector<int>& h : hot_dims_) {
    // q8_0: one code per dim and a 2-byte scale per slot (in a layer with hot dims)
    n += static_cast<uint64_t>(n_used_) *
         (type_ == KvType::Q8_0 ? (h.empty() ? 0 : h.size() + 2) : h.size() * elem_bytes());
  }
  return n + tier_->ram_tail_bytes();
}

void KvCache::check_io() const {
  if (tier_) tier_->check_io();
}

void KvCache::gather(int layer, int kv_head, const int32_t* slots, int n, uint8_t* k,
                     uint8_t* v) const {
  const size_t row = row_bytes_;
  auto slot = [&](int j) -> size_t { return row_of(layer, slots ? slots[j] : j); };
  if (!offloaded(layer)) {
    const auto* kb = static_cast<const uint8_t*>(k_rows(layer, kv_head));
    const auto* vb = static_cast<const uint8_t*>(v_rows(layer, kv_head));
    for (int j = 0; j < n; ++j) {
      std::memcpy(k + j * row, kb + slot(j) * row, row);
      std::memcpy(v + j * row, vb + slot(j) * row, row);
    }
    return;
  }
  const size_t r = hot_index(layer, kv_head);
  thread_local std::vector<uint8_t> buf;  // [n, tier_row]
  if (type_ == KvType::Q8_0) {  // whole K and V rows in the file
    buf.resize(static_cast<size_t>(n) * 2 * row);
    tier_->read(static_cast<int>(r), slots, n, buf.data());
    for (int j = 0; j < n; ++j) {
      std::memcpy(k + j * row, buf.data() + 2 * j * row, row);
      std::memcpy(v + j * row, buf.data() + (2 * j + 1) * row, row);
    }
    return;
  }
  const size_t eb = elem_bytes(), hd = shape_.head_dim;
  const std::vector<int>& hot = hot_dims_[r];
  const std::vector<int>& cold = cold_dims_[r];
  const size_t tier_row = (cold.size() + hd) * eb, hot_col = static_cast<size_t>(capacity_) * eb;
  buf.resize(static_cast<size_t>(n) * tier_row);
  tier_->read(static_cast<int>(r), slots, n, buf.data());
  const uint8_t* hb = hot_[r].get();
  for (int j = 0; j < n; ++j) {
    uint8_t* kd = k + j * row;
    const uint8_t* h = hb + slot(j) * eb;
    for (size_t i = 0; i < hot.size(); ++i) std::memcpy(kd + hot[i] * eb, h + i * hot_col, eb);
    const uint8_t* t = buf.data() + j * tier_row;
    for (size_t i = 0; i < cold.size(); ++i) std::memcpy(kd + cold[i] * eb, t + i * eb, eb);
    std::memcpy(v + j * row, t + cold.size() * eb, row);
  }
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
  const int hd = shape_.head_dim;
  if (type_ == KvType::Q8_0) {
    thread_local std::vector<uint8_t> kv;  // [2, row_bytes] the K row, then the V row
    kv.resize(2 * row_bytes_);
    quantize_row_q8_0(k, hd, kv.data());
    quantize_row_q8_0(v, hd, kv.data() + row_bytes_);
    if (offloaded(layer)) {  // the packed hot slice in RAM, whole rows to the file tier
      const size_t r = hot_index(layer, kv_head);
      const std::vector<int>& hot = hot_dims_[r];
      if (!hot.empty()) {
        pack_hot_q8(kv.data(), hot.data(), static_cast<int>(hot.size()),
                    reinterpret_cast<int8_t*>(hot_[r].get()) + slot, capacity_,
                    hot_scale_[r].get() + slot);
      }
      tier_->write(static_cast<int>(r), slot, kv.data());
      return;
    }
    const size_t off = row_offset(layer, kv_head, row_of(layer, slot));
    std::memcpy(k_.get() + off, kv.data(), row_bytes_);
    std::memcpy(v_.get() + off, kv.data() + row_bytes_, row_bytes_);
    return;
  }
  if (offloaded(layer)) {
    // Convert, then split: hot K dims to RAM, the rest of K and all of V to the file tier.
    const size_t eb = elem_bytes(), r = hot_index(layer, kv_head);
    thread_local std::vector<uint8_t> kc, vc, row;  // [hd], [hd], [tier row] of elem type
    kc.resize(hd * eb);
    vc.resize(hd * eb);
    for (int i = 0; i < hd; ++i) {
      if (type_ == KvType::F32) {
        std::memcpy(kc.data() + i * eb, k + i, eb);
        std::memcpy(vc.data() + i * eb, v + i, eb);
      } else {
        const uint16_t kh = fp32_to_fp16(k[i]), vh = fp32_to_fp16(v[i]);
        std::memcpy(kc.data() + i * eb, &kh, eb);
        std::memcpy(vc.data() + i * eb, &vh, eb);
      }
    }
    const std::vector<int>& hot = hot_dims_[r];
    const std::vector<int>& cold = cold_dims_[r];
    uint8_t* h = hot_[r].get() + static_cast<size_t>(slot) * eb;  // column-major
    for (size_t i = 0; i < hot.size(); ++i) {
      std::memcpy(h + i * capacity_ * eb, kc.data() + hot[i] * eb, eb);
    }
    row.resize((cold.size() + hd) * eb);
    for (size_t i = 0; i < cold.size(); ++i) std::memcpy(row.data() + i * eb, kc.data() + cold[i] * eb, eb);
    std::memcpy(row.data() + cold.size() * eb, vc.data(), hd * eb);
    tier_->write(static_cast<int>(r), slot, row.data());
    return;
  }
  const size_t off = row_offset(layer, kv_head, row_of(layer, slot));
  if (type_ == KvType::F32) {
    std::memcpy(k_.get() + off, k, hd * sizeof(float));
    std::memcpy(v_.get() + off, v, hd * sizeof(float));
    return;
  }
  auto* kd = reinterpret_cast<uint16_t*>(k_.get() + off);
  auto* vd = reinterpret_cast<uint16_t*>(v_.get() + off);
  for (int i = 0; i < hd; ++i) {
    kd[i] = fp32_to_fp16(k[i]);
    vd[i] = fp32_to_fp16(v[i]);
  }
}

void KvCache::commit(int n, const int32_t* pos) {
  FASA_CHECK(n >= 0 && n_used_ + n <= capacity_);
  for (int i = 0; i < n; ++i) pos_[n_used_ + i] = pos[i];
  n_used_ += n;
  if (tier_) tier_->flush(n_used_);
}

}  // namespace fasa
