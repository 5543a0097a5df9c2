#include "fasa/attention/kv_layer_store.h"

#include <algorithm>
#include <cstring>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/kernels/q8_0.h"

namespace fasa {

void encode_kv_row(KvType type, int head_dim, const float* x, uint8_t* out) {
  switch (type) {
    case KvType::F32: std::memcpy(out, x, static_cast<size_t>(head_dim) * sizeof(float)); return;
    case KvType::F16: {
      auto* h = reinterpret_cast<uint16_t*>(out);
      for (int i = 0; i < head_dim; ++i) h[i] = fp32_to_fp16(x[i]);
      return;
    }
    case KvType::Q8_0: quantize_row_q8_0(x, head_dim, out); return;
  }
}

KvPlainStore::KvPlainStore(KvType type, int head_dim, int n_kv_heads, int rows, bool ring)
    : type_(type),
      head_dim_(head_dim),
      n_kv_heads_(n_kv_heads),
      rows_(rows),
      ring_(ring),
      row_bytes_(kv_row_bytes(type, head_dim)) {
  FASA_CHECK(rows > 0 && n_kv_heads > 0);
  const size_t n = static_cast<size_t>(n_kv_heads) * rows * row_bytes_;
  k_.reset(new uint8_t[n]);
  v_.reset(new uint8_t[n]);
}

void KvPlainStore::store(int kv_head, int slot, const float* k, const float* v) {
  const size_t off = head_offset(kv_head) + static_cast<size_t>(row_of(slot)) * row_bytes_;
  encode_kv_row(type_, head_dim_, k, k_.get() + off);
  encode_kv_row(type_, head_dim_, v, v_.get() + off);
}

void KvPlainStore::gather(int kv_head, const int32_t* slots, int n, uint8_t* k, uint8_t* v) const {
  const uint8_t* kb = k_rows(kv_head);
  const uint8_t* vb = v_rows(kv_head);
  const size_t row = row_bytes_;
  for (int j = 0; j < n; ++j) {
    const size_t r = static_cast<size_t>(row_of(slots ? slots[j] : j));
    std::memcpy(k + j * row, kb + r * row, row);
    std::memcpy(v + j * row, vb + r * row, row);
  }
}

uint64_t KvPlainStore::ram_bytes(int n_used) const {
  return 2ull * n_kv_heads_ * static_cast<uint64_t>(std::min(n_used, rows_)) * row_bytes_;
}

void KvPlainStore::copy_from(const KvPlainStore& src, int n_used) {
  FASA_CHECK(src.type_ == type_ && src.rows_ == rows_ && src.ring_ == ring_ &&
             src.n_kv_heads_ == n_kv_heads_ && src.head_dim_ == head_dim_);
  const size_t bytes = static_cast<size_t>(std::min(n_used, rows_)) * row_bytes_;
  for (int g = 0; g < n_kv_heads_; ++g) {
    std::memcpy(k_.get() + head_offset(g), src.k_.get() + src.head_offset(g), bytes);
    std::memcpy(v_.get() + head_offset(g), src.v_.get() + src.head_offset(g), bytes);
  }
}

}  // namespace fasa
