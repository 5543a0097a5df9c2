// Tensor element types as numbered by GGUF/ggml, with their block geometry.
#pragma once

#include <cstdint>
#include <string_view>

namespace fasa {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
  // Engine-only layouts, made at load from the GGUF type of the same name (kernels/repack.h):
  // 16 rows interleaved block by block. Never in a file (dtype_info().engine_only).
  Q4_0_R16 = 0x10000 | 2,
  Q4_1_R16 = 0x10000 | 3,
  Q8_0_R16 = 0x10000 | 8,
  Q4_K_R16 = 0x10000 | 12,
  Q6_K_R16 = 0x10000 | 14,
};

struct DTypeInfo {
  std::string_view name;     // "Q4_1"
  int64_t block_elems;       // elements per block (1 for plain types)
  int64_t block_bytes;       // bytes per block
  bool supported;            // this engine can compute with it
  bool engine_only = false;  // a layout made at load, never valid in a GGUF file
};

// Returns nullptr for a type number this engine does not know at all.
const DTypeInfo* dtype_info(uint32_t type);
inline const DTypeInfo& dtype_info(DType t) { return *dtype_info(static_cast<uint32_t>(t)); }
inline std::string_view dtype_name(DType t) { return dtype_info(t).name; }

}  // namespace fasa
