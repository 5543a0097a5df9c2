// Per-sequence KV cache. Rows are contiguous per (layer, kv_head): a policy or kernel that reads
// a head's keys walks one dense [capacity, head_dim] array. Slot (row index) and pos (the token
// position, the RoPE angle) are kept apart: they differ once anything is evicted.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fasa {

enum class KvType { F16, F32 };
const char* kv_type_name(KvType t);
KvType parse_kv_type(const std::string& s);  // "f16" | "f32"; throws fasa::Error otherwise

struct AttnShape {
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int n_group() const { return n_heads / n_kv_heads; }
};

class KvCache {
 public:
  KvCache(const AttnShape& shape, KvType type, int capacity);

  const AttnShape& shape() const { return shape_; }
  KvType type() const { return type_; }
  int capacity() const { return capacity_; }
  int n_used() const { return n_used_; }
  size_t elem_bytes() const { return type_ == KvType::F16 ? 2 : 4; }
  // Bytes of K+V rows written so far (what a full-attention step reads per token).
  uint64_t used_bytes() const;
  uint64_t capacity_bytes() const;

  // [capacity, head_dim] rows of elem type for (layer, kv_head).
  const void* k_rows(int layer, int kv_head) const { return k_.get() + row_offset(layer, kv_head, 0); }
  const void* v_rows(int layer, int kv_head) const { return v_.get() + row_offset(layer, kv_head, 0); }

  // Writes one token's K and V for (layer, kv_head) at `slot` (may be >= n_used until commit).
  void store(int layer, int kv_head, int slot, const float* k, const float* v);  // k, v: [head_dim]
  // Makes slots [n_used, n_used + n) visible with positions pos[0..n).
  void commit(int n, const int32_t* pos);
  int32_t pos_of(int slot) const { return pos_[slot]; }
  // Drops everything (slots reused from 0).
  void clear() { n_used_ = 0; }

 private:
  size_t row_offset(int layer, int kv_head, int slot) const {
    return ((static_cast<size_t>(layer) * shape_.n_kv_heads + kv_head) * capacity_ + slot) *
           shape_.head_dim * elem_bytes();
  }
  AttnShape shape_;
  KvType type_;
  int capacity_;
  int n_used_ = 0;
  std::unique_ptr<uint8_t[]> k_;  // [n_layers, n_kv_heads, capacity, head_dim] (pages untouched until written)
  std::unique_ptr<uint8_t[]> v_;  // same
  std::vector<int32_t> pos_;      // [capacity]
};

}  // namespace fasa
