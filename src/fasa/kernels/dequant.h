// Dequantization of GGUF tensor rows to f32.
// `n` must be a multiple of the type's block size (see core/dtype.h); callers validate that
// at load time, so these never throw.
#pragma once

#include <cstdint>

#include "fasa/core/dtype.h"

namespace fasa {

// Fast path (may use SIMD). dst: [n] f32.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

}  // namespace fasa
