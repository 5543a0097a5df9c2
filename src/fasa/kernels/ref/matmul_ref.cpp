// Reference matmul: dequantize each weight row with ref::dequantize_row, accumulate in double.
// Slow and simple; for tests only.
#include <vector>

#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul.h"

namespace fasa::ref {

void matmul(DType type, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok,
            float* y) {
  const DTypeInfo& info = dtype_info(type);
  const int64_t row_bytes = n_in / info.block_elems * info.block_bytes;
  const auto* wb = static_cast<const uint8_t*>(w);
  std::vector<float> row(static_cast<size_t>(n_in));  // [n_in] one dequantized weight row
  for (int64_t o = 0; o < n_out; ++o) {
    ref::dequantize_row(type, wb + o * row_bytes, row.data(), n_in);
    for (int64_t t = 0; t < n_tok; ++t) {
      const float* xt = x + t * n_in;  // [n_in]
      double acc = 0.0;
      for (int64_t i = 0; i < n_in; ++i) acc += static_cast<double>(row[i]) * xt[i];
      y[t * n_out + o] = static_cast<float>(acc);
    }
  }
}

}  // namespace fasa::ref
