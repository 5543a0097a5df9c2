#include "fasa/kernels/kv_rows.h"

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/kernels/q8_0.h"

namespace fasa {

const char* kv_type_name(KvType t) {
  return t == KvType::F16 ? "f16" : t == KvType::F32 ? "f32" : "q8_0";
}

KvType parse_kv_type(const std::string& s) {
  if (s == "f16") return KvType::F16;
  if (s == "f32") return KvType::F32;
  if (s == "q8_0") return KvType::Q8_0;
  fail("unknown KV cache type '{}' (expected f16, f32 or q8_0)", s);
}

size_t kv_row_bytes(KvType t, int head_dim) {
  switch (t) {
    case KvType::F16: return static_cast<size_t>(head_dim) * 2;
    case KvType::F32: return static_cast<size_t>(head_dim) * 4;
    case KvType::Q8_0: return q8_0_row_bytes(head_dim);
  }
  return 0;
}

void kv_row_to_f32(const void* row, KvType t, int head_dim, float* out) {
  const auto* r = static_cast<const uint8_t*>(row);
  switch (t) {
    case KvType::F16:
      for (int i = 0; i < head_dim; ++i)
        out[i] = fp16_to_fp32(reinterpret_cast<const uint16_t*>(r)[i]);
      return;
    case KvType::F32: std::memcpy(out, r, static_cast<size_t>(head_dim) * 4); return;
    case KvType::Q8_0: dequantize_row_q8_0(r, head_dim, out); return;
  }
}

float kv_value(const void* row, KvType t, int i) {
  const auto* r = static_cast<const uint8_t*>(row);
  switch (t) {
    case KvType::F16: return fp16_to_fp32(reinterpret_cast<const uint16_t*>(r)[i]);
    case KvType::F32: return reinterpret_cast<const float*>(r)[i];
    case KvType::Q8_0: return q8_0_value(r, i);
  }
  return 0.0f;
}

}  // namespace fasa
