#include "fasa/attention/kv_tiered_store.h"

#include <cstring>

#include "fasa/core/error.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/q8_0.h"

namespace fasa {

void pack_hot_q8(const uint8_t* k_row, const int* dims, int n, int8_t* q, size_t stride,
                 uint16_t* d) {
  ScratchFrame f;
  float* x = f.take<float>(n);  // [n] the dims' stored values
  for (int i = 0; i < n; ++i) x[i] = q8_0_value(k_row, dims[i]);
  *d = q8_quantize(x, n, q, stride);
}

size_t KvTieredStore::tier_row_bytes(KvType type, int head_dim, size_t n_hot) {
  if (type == KvType::Q8_0) return 2 * kv_row_bytes(type, head_dim);  // whole K and V rows
  const size_t eb = type == KvType::F16 ? 2 : 4;
  return (head_dim - n_hot + head_dim) * eb;  // cold K dims, then V
}

KvTieredStore::KvTieredStore(KvType type, int head_dim, int capacity,
                             const std::vector<std::vector<int>>& hot_dims, KvTier* tier,
                             int region0)
    : type_(type),
      head_dim_(head_dim),
      capacity_(capacity),
      row_bytes_(kv_row_bytes(type, head_dim)),
      heads_(hot_dims.size()),
      tier_(tier),
      region0_(region0) {
  FASA_CHECK(tier != nullptr && capacity > 0);
  const bool q8 = type == KvType::Q8_0;
  const size_t eb = q8 ? 1 : elem_bytes();
  for (size_t g = 0; g < hot_dims.size(); ++g) {
    Head& h = heads_[g];
    h.hot_dims = hot_dims[g];
    std::vector<char> is_hot(head_dim, 0);
    for (int d : h.hot_dims) {
      FASA_CHECK(d >= 0 && d < head_dim);
      is_hot[d] = 1;
    }
    for (int d = 0; d < head_dim; ++d) {
      if (!is_hot[d]) h.cold_dims.push_back(d);
    }
    h.hot.reset(new uint8_t[static_cast<size_t>(capacity) * h.hot_dims.size() * eb + 1]);
    if (q8) h.scale.reset(new uint16_t[capacity]);
  }
}

uint64_t KvTieredStore::ram_bytes(int n_used) const {
  uint64_t n = 0;
  for (const Head& h : heads_) {
    const size_t n_hot = h.hot_dims.size();
    // q8_0: one code per dim and a 2-byte scale per slot (in a head with hot dims)
    n += static_cast<uint64_t>(n_used) *
         (type_ == KvType::Q8_0 ? (n_hot == 0 ? 0 : n_hot + 2) : n_hot * elem_bytes());
  }
  return n;
}

void KvTieredStore::store(int kv_head, int slot, const float* k, const float* v) {
  FASA_DCHECK(slot >= 0 && slot < capacity_);
  const Head& h = heads_[kv_head];
  const int region = region0_ + kv_head;
  if (type_ == KvType::Q8_0) {  // the packed hot slice in RAM, whole rows to the file tier
    ScratchFrame f;
    uint8_t* kv = f.take<uint8_t>(2 * row_bytes_);  // [2, row_bytes] the K row, then the V row
    encode_kv_row(type_, head_dim_, k, kv);
    encode_kv_row(type_, head_dim_, v, kv + row_bytes_);
    if (!h.hot_dims.empty()) {
      pack_hot_q8(kv, h.hot_dims.data(), static_cast<int>(h.hot_dims.size()),
                  reinterpret_cast<int8_t*>(h.hot.get()) + slot, capacity_, h.scale.get() + slot);
    }
    tier_->write(region, slot, kv);
    return;
  }
  // Convert, then split: hot K dims to RAM, the rest of K and all of V to the file tier.
  const size_t eb = elem_bytes();
  ScratchFrame f;
  uint8_t* kc = f.take<uint8_t>(head_dim_ * eb);  // [hd] of elem type
  encode_kv_row(type_, head_dim_, k, kc);
  uint8_t* hot = h.hot.get() + static_cast<size_t>(slot) * eb;  // column-major
  for (size_t i = 0; i < h.hot_dims.size(); ++i) {
    std::memcpy(hot + i * capacity_ * eb, kc + h.hot_dims[i] * eb, eb);
  }
  const size_t n_cold = h.cold_dims.size();
  uint8_t* row = f.take<uint8_t>((n_cold + head_dim_) * eb);  // [tier row]
  for (size_t i = 0; i < n_cold; ++i) {
    std::memcpy(row + i * eb, kc + h.cold_dims[i] * eb, eb);
  }
  encode_kv_row(type_, head_dim_, v, row + n_cold * eb);
  tier_->write(region, slot, row);
}

void KvTieredStore::gather(int kv_head, const int32_t* slots, int n, uint8_t* k, uint8_t* v) const {
  const size_t row = row_bytes_;
  const Head& h = heads_[kv_head];
  const int region = region0_ + kv_head;
  ScratchFrame f;
  uint8_t* buf = nullptr;       // [n, tier row]
  if (type_ == KvType::Q8_0) {  // whole K and V rows in the file
    buf = f.take<uint8_t>(static_cast<size_t>(n) * 2 * row);
    tier_->read(region, slots, n, buf);
    for (int j = 0; j < n; ++j) {
      std::memcpy(k + j * row, buf + 2 * j * row, row);
      std::memcpy(v + j * row, buf + (2 * j + 1) * row, row);
    }
    return;
  }
  const size_t eb = elem_bytes(), hd = head_dim_;
  const size_t tier_row = (h.cold_dims.size() + hd) * eb;
  const size_t hot_col = static_cast<size_t>(capacity_) * eb;
  buf = f.take<uint8_t>(static_cast<size_t>(n) * tier_row);
  tier_->read(region, slots, n, buf);
  const uint8_t* hb = h.hot.get();
  for (int j = 0; j < n; ++j) {
    uint8_t* kd = k + j * row;
    const uint8_t* hs = hb + static_cast<size_t>(slots ? slots[j] : j) * eb;
    for (size_t i = 0; i < h.hot_dims.size(); ++i) {
      std::memcpy(kd + h.hot_dims[i] * eb, hs + i * hot_col, eb);
    }
    const uint8_t* t = buf + j * tier_row;
    for (size_t i = 0; i < h.cold_dims.size(); ++i) {
      std::memcpy(kd + h.cold_dims[i] * eb, t + i * eb, eb);
    }
    std::memcpy(v + j * row, t + h.cold_dims.size() * eb, row);
  }
}

}  // namespace fasa
