// FASA-M's storage kind (kv_layer_store.h): in an offloaded layer each kv head keeps its hot K
// dims packed in RAM, [n_hot, capacity] column-major (what FASA's scoring reads), and the other K
// dims and all of V in a file tier (kv_tier.h, shared by the cache's offloaded layers; one region
// per (layer, kv head)). A q8_0 cache keeps a re-quantized copy of the hot dims (pack_hot_q8) and
// whole K and V rows in the file, since Q8_0 blocks cannot be split.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fasa/attention/kv_layer_store.h"
#include "fasa/attention/kv_tier.h"

namespace fasa {

class KvTieredStore final : public KvLayerStore {
 public:
  // hot_dims: [n_kv_heads] ascending K dims kept in RAM. The tier's regions
  // region0 .. region0 + n_kv_heads - 1 are this layer's; their row is tier_row_bytes(...).
  KvTieredStore(KvType type, int head_dim, int capacity,
                const std::vector<std::vector<int>>& hot_dims, KvTier* tier, int region0);
  // Bytes of one file-tier row of a head with n_hot hot dims.
  static size_t tier_row_bytes(KvType type, int head_dim, size_t n_hot);

  void store(int kv_head, int slot, const float* k, const float* v) override;
  // Thread-safe; I/O errors surface through the tier's check_io().
  void gather(int kv_head, const int32_t* slots, int n, uint8_t* k, uint8_t* v) const override;
  const uint8_t* k_rows(int) const override { return nullptr; }
  const uint8_t* v_rows(int) const override { return nullptr; }
  uint64_t ram_bytes(int n_used) const override;
  const KvTieredStore* tiered() const override { return this; }

  // [hot_dims.size(), capacity] packed hot K dims of kv_head: dim hot_dims[i] of slot t is
  // element i * capacity + t; f16/f32 values, or q8_0 int8 codes with hot_scales().
  const void* hot_rows(int kv_head) const { return heads_[kv_head].hot.get(); }
  const uint16_t* hot_scales(int kv_head) const {
    return heads_[kv_head].scale.get();
  }  // [capacity]
  const std::vector<int>& hot_dims(int kv_head) const { return heads_[kv_head].hot_dims; }

 private:
  struct Head {
    std::vector<int> hot_dims;          // ascending
    std::vector<int> cold_dims;         // the other K dims, ascending
    std::unique_ptr<uint8_t[]> hot;     // [n_hot, capacity] of elem (q8_0: int8 codes)
    std::unique_ptr<uint16_t[]> scale;  // q8_0: [capacity] fp16 scale of each slot's codes
  };
  size_t elem_bytes() const { return type_ == KvType::F16 ? 2 : 4; }
  KvType type_;
  int head_dim_;
  int capacity_;
  size_t row_bytes_;
  std::vector<Head> heads_;  // [n_kv_heads]
  KvTier* tier_;             // the cache's, shared by its offloaded layers
  int region0_;
};

// FASA's packed dominant-key slice of a q8_0 cache (FASA-C's copy and FASA-M's hot tier alike):
// the dims `dims[0, n)` of one stored Q8_0 K row, dequantized, then quantized again with one scale
// over them (kernels/q8_0.h's rule). Codes go to q[i * stride], the scale's fp16 bits to *d.
void pack_hot_q8(const uint8_t* k_row, const int* dims, int n, int8_t* q, size_t stride,
                 uint16_t* d);

}  // namespace fasa
