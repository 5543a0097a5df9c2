#include "fasa/attention/kv_cache.h"

#include <cstring>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"

namespace fasa {

const char* kv_type_name(KvType t) { return t == KvType::F16 ? "f16" : "f32"; }

KvType parse_kv_type(const std::string& s) {
  if (s == "f16") return KvType::F16;
  if (s == "f32") return KvType::F32;
  fail("unknown KV cache type '{}' (expected f16 or f32)", s);
}

KvCache::KvCache(const AttnShape& shape, KvType type, int capacity)
    : shape_(shape), type_(type), capacity_(capacity), pos_(static_cast<size_t>(capacity)) {
  FASA_CHECK(capacity > 0 && shape.n_kv_heads > 0 && shape.head_dim > 0);
  const size_t n = capacity_bytes() / 2;
  k_.reset(new uint8_t[n]);
  v_.reset(new uint8_t[n]);
}

uint64_t KvCache::used_bytes() const {
  return 2ull * shape_.n_layers * shape_.n_kv_heads * static_cast<uint64_t>(n_used_) *
         shape_.head_dim * elem_bytes();
}

uint64_t KvCache::capacity_bytes() const {
  return 2ull * shape_.n_layers * shape_.n_kv_heads * static_cast<uint64_t>(capacity_) *
         shape_.head_dim * elem_bytes();
}

void KvCache::store(int layer, int kv_head, int slot, const float* k, const float* v) {
  FASA_DCHECK(slot >= 0 && slot < capacity_);
  const size_t off = row_offset(layer, kv_head, slot);
  const int hd = shape_.head_dim;
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
}

}  // namespace fasa
