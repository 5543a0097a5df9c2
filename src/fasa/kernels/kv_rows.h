// The row formats of the KV cache, and a view of one head's K and V rows for the attention
// kernels (kernels/attend.h). The cache itself (attention/kv_cache.h) owns the storage.
#pragma once

#include <cstddef>
#include <string>

namespace fasa {

// How K and V rows are stored: fp16, fp32, or Q8_0 blocks (kernels/q8_0.h: per 32 values one
// fp16 scale and 32 int8 codes; head_dim must be a multiple of 32).
enum class KvType { F16, F32, Q8_0 };
const char* kv_type_name(KvType t);
KvType parse_kv_type(const std::string& s);  // "f16" | "f32" | "q8_0"; throws fasa::Error otherwise
// Bytes of one K (or V) row of head_dim values.
size_t kv_row_bytes(KvType t, int head_dim);
// A row of `t` as floats (Q8_0: d * q). row: kv_row_bytes(t, head_dim) bytes, out: [head_dim]
void kv_row_to_f32(const void* row, KvType t, int head_dim, float* out);
// Value i of such a row.
float kv_value(const void* row, KvType t, int i);

struct KvRows {
  const void* k = nullptr;  // [capacity] rows of `type` (kv_row_bytes(type, head_dim) each)
  const void* v = nullptr;  // same
  KvType type = KvType::F16;
  int head_dim = 0;
};

}  // namespace fasa
