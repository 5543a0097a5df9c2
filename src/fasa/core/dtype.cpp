#include "fasa/core/dtype.h"

namespace fasa {

const DTypeInfo* dtype_info(uint32_t type) {
  static const DTypeInfo kF32{"F32", 1, 4, true};
  static const DTypeInfo kF16{"F16", 1, 2, true};
  static const DTypeInfo kQ4_0{"Q4_0", 32, 18, true};
  static const DTypeInfo kQ4_1{"Q4_1", 32, 20, true};
  static const DTypeInfo kQ5_0{"Q5_0", 32, 22, true};
  static const DTypeInfo kQ5_1{"Q5_1", 32, 24, true};
  static const DTypeInfo kQ8_0{"Q8_0", 32, 34, true};
  static const DTypeInfo kQ8_1{"Q8_1", 32, 36, false};
  static const DTypeInfo kQ2_K{"Q2_K", 256, 84, true};
  static const DTypeInfo kQ3_K{"Q3_K", 256, 110, true};
  static const DTypeInfo kQ4_K{"Q4_K", 256, 144, true};
  static const DTypeInfo kQ5_K{"Q5_K", 256, 176, true};
  static const DTypeInfo kQ6_K{"Q6_K", 256, 210, true};
  static const DTypeInfo kQ8_K{"Q8_K", 256, 292, false};
  static const DTypeInfo kI8{"I8", 1, 1, false};
  static const DTypeInfo kI16{"I16", 1, 2, false};
  static const DTypeInfo kI32{"I32", 1, 4, false};
  static const DTypeInfo kI64{"I64", 1, 8, false};
  static const DTypeInfo kF64{"F64", 1, 8, false};
  static const DTypeInfo kBF16{"BF16", 1, 2, true};
  // Bytes per block are per row on average: a 16-row group block holds 16 rows' blocks.
  static const DTypeInfo kQ4_0_R16{"Q4_0_R16", 32, 18, true, true};
  static const DTypeInfo kQ4_1_R16{"Q4_1_R16", 32, 20, true, true};
  static const DTypeInfo kQ8_0_R16{"Q8_0_R16", 32, 34, true, true};
  static const DTypeInfo kQ4_K_R16{"Q4_K_R16", 256, 148, true, true};
  static const DTypeInfo kQ6_K_R16{"Q6_K_R16", 256, 210, true, true};
  switch (static_cast<DType>(type)) {
    case DType::F32: return &kF32;
    case DType::F16: return &kF16;
    case DType::Q4_0: return &kQ4_0;
    case DType::Q4_1: return &kQ4_1;
    case DType::Q5_0: return &kQ5_0;
    case DType::Q5_1: return &kQ5_1;
    case DType::Q8_0: return &kQ8_0;
    case DType::Q8_1: return &kQ8_1;
    case DType::Q2_K: return &kQ2_K;
    case DType::Q3_K: return &kQ3_K;
    case DType::Q4_K: return &kQ4_K;
    case DType::Q5_K: return &kQ5_K;
    case DType::Q6_K: return &kQ6_K;
    case DType::Q8_K: return &kQ8_K;
    case DType::I8: return &kI8;
    case DType::I16: return &kI16;
    case DType::I32: return &kI32;
    case DType::I64: return &kI64;
    case DType::F64: return &kF64;
    case DType::BF16: return &kBF16;
    case DType::Q4_0_R16: return &kQ4_0_R16;
    case DType::Q4_1_R16: return &kQ4_1_R16;
    case DType::Q8_0_R16: return &kQ8_0_R16;
    case DType::Q4_K_R16: return &kQ4_K_R16;
    case DType::Q6_K_R16: return &kQ6_K_R16;
  }
  return nullptr;
}

}  // namespace fasa
