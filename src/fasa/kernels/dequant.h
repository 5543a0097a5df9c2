// Dequantization of GGUF tensor rows to f32.
// `n` must be a multiple of the type's block size (see core/dtype.h); callers validate that
// at load time, so these never throw.
#pragma once

#include <cstdint>

#include "fasa/core/dtype.h"
#include "fasa/kernels/kernel_list.h"

namespace fasa {

// dequantize_row: fast path (may use SIMD). dst: [n] f32.
#define FASA_DEQUANT_KERNELS(X) \
  X(void, dequantize_row, (DType type, const void* src, float* dst, int64_t n), (type, src, dst, n))
FASA_DEQUANT_KERNELS(FASA_DECLARE_KERNEL)

}  // namespace fasa
