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
  k_ = PageBuffer(n);
  v_ = PageBuffer(n);
}

void KvPlainStore::store(int kv_head, int slot, const float* k, const float* v) {
  FASA_DCHECK(slot >= evict_horizon(kv_head));  // new slots are never below an eviction
  const size_t off = head_offset(kv_head) + static_cast<size_t>(row_of(slot)) * row_bytes_;
  encode_kv_row(type_, head_dim_, k, k_.data() + off);
  encode_kv_row(type_, head_dim_, v, v_.data() + off);
}

void KvPlainStore::gather(int kv_head, const int32_t* slots, int n, uint8_t* k, uint8_t* v) const {
  const uint8_t* kb = k_rows(kv_head);
  const uint8_t* vb = v_rows(kv_head);
  const size_t row = row_bytes_;
  std::vector<int32_t> rows;  // [n] when kv_head evicted: the slots' rows
  if (evicted(kv_head)) {
    FASA_CHECK(slots != nullptr);
    rows.resize(n);
    rows_of(kv_head, slots, n, rows.data());
    slots = rows.data();
  }
  for (int j = 0; j < n; ++j) {
    const size_t r = static_cast<size_t>(row_of(slots ? slots[j] : j));
    std::memcpy(k + j * row, kb + r * row, row);
    std::memcpy(v + j * row, vb + r * row, row);
  }
}

uint64_t KvPlainStore::ram_bytes(int n_used) const {
  const uint64_t rows = static_cast<uint64_t>(n_kv_heads_) * std::min(n_used, rows_);
  return 2ull * (rows - freed_rows()) * row_bytes_;
}

uint64_t KvPlainStore::freed_rows() const {
  uint64_t n = 0;
  for (const Evicted& e : ev_) n += static_cast<uint64_t>(e.horizon) - e.kept.size();
  return n;
}

void KvPlainStore::copy_from(const KvPlainStore& src, int n_used) {
  FASA_CHECK(src.type_ == type_ && src.rows_ == rows_ && src.ring_ == ring_ &&
             src.n_kv_heads_ == n_kv_heads_ && src.head_dim_ == head_dim_ && src.ev_.empty());
  const size_t bytes = static_cast<size_t>(std::min(n_used, rows_)) * row_bytes_;
  for (int g = 0; g < n_kv_heads_; ++g) {
    std::memcpy(k_.data() + head_offset(g), src.k_.data() + src.head_offset(g), bytes);
    std::memcpy(v_.data() + head_offset(g), src.v_.data() + src.head_offset(g), bytes);
  }
  ev_.clear();
}

void KvPlainStore::write_rows(int kv_head, int first, int n, const void* k, const void* v) {
  FASA_CHECK(ev_.empty() && kv_head >= 0 && kv_head < n_kv_heads_ && first >= 0 && n >= 0 &&
             first + n <= rows_);
  const size_t off = head_offset(kv_head) + static_cast<size_t>(first) * row_bytes_;
  std::memcpy(k_.data() + off, k, static_cast<size_t>(n) * row_bytes_);
  std::memcpy(v_.data() + off, v, static_cast<size_t>(n) * row_bytes_);
}

int KvPlainStore::evict(int kv_head, const std::vector<int32_t>& kept, int horizon) {
  FASA_CHECK(!ring_ && kv_head >= 0 && kv_head < n_kv_heads_);
  if (ev_.empty()) ev_.resize(n_kv_heads_);
  Evicted& e = ev_[kv_head];
  FASA_CHECK(horizon >= e.horizon && horizon <= rows_ && kept.size() <= size_t(horizon));
  uint8_t* kb = k_.data() + head_offset(kv_head);
  uint8_t* vb = v_.data() + head_offset(kv_head);
  const size_t rb = row_bytes_;
  size_t j = 0;  // cursor in e.kept: a slot below the old horizon is found there
  int moved = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    const int32_t s = kept[i];
    FASA_CHECK(s >= 0 && s < horizon && (i == 0 || s > kept[i - 1]));
    size_t row = static_cast<size_t>(s);
    if (s < e.horizon) {
      while (j < e.kept.size() && e.kept[j] < s) ++j;
      FASA_CHECK(j < e.kept.size() && e.kept[j] == s);  // a gone slot stays gone
      row = j;
    }
    if (row != i) {  // row > i: rows only move down, each to a row no later kept slot holds
      std::memcpy(kb + i * rb, kb + row * rb, rb);
      std::memcpy(vb + i * rb, vb + row * rb, rb);
      ++moved;
    }
  }
  e.kept = kept;
  e.horizon = horizon;
  const size_t hole = head_offset(kv_head) + kept.size() * rb;
  k_.release(hole, (horizon - kept.size()) * rb);
  v_.release(hole, (horizon - kept.size()) * rb);
  return moved;
}

void KvPlainStore::rows_of(int kv_head, const int32_t* slots, int n, int32_t* rows) const {
  if (!evicted(kv_head)) {
    std::copy(slots, slots + n, rows);
    return;
  }
  const Evicted& e = ev_[kv_head];
  size_t j = 0;
  for (int i = 0; i < n; ++i) {
    const int32_t s = slots[i];
    if (s >= e.horizon) {
      rows[i] = s;
      continue;
    }
    while (j < e.kept.size() && e.kept[j] < s) ++j;
    FASA_DCHECK(j < e.kept.size() && e.kept[j] == s);  // never a gone slot
    rows[i] = static_cast<int32_t>(j);
  }
}

size_t KvPlainStore::resident_k_pages(int kv_head, int lo, int hi) const {
  return k_.resident_pages(head_offset(kv_head) + static_cast<size_t>(lo) * row_bytes_,
                           static_cast<size_t>(hi - lo) * row_bytes_);
}

}  // namespace fasa
