// Reference matmul, double accumulation, for tests only. Float types: dequantize each weight row
// with ref::dequantize_row. Q4_0/Q4_1/Q5_0/Q5_1/Q8_0: the integer path's math (matmul_q8.h),
// block codes read straight from the GGML layouts, activations quantized by quantize_acts_q8:
// y = sum_b (d_b * dx_b * sum_j c_j q_j + m_b * sx_b), with c_j the signed code. K-quants
// (matmul_q8k.h): ref::dequantize_row's rows times the q8_K activations d_b * q_j.
#include <cstring>
#include <vector>

#include "fasa/core/f16.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul.h"
#include "fasa/kernels/matmul_q8.h"
#include "fasa/kernels/matmul_q8k.h"
#include "support/ref/kernels_ref.h"

namespace fasa::ref {

namespace {

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}

// Signed codes c[32] (value = c * d + m), d and m of one block.
void block_codes(DType type, const uint8_t* blk, int* c, float* d, float* m) {
  *d = f16_at(blk);
  *m = 0.0f;
  switch (type) {
    case DType::Q8_0:
      for (int j = 0; j < 32; ++j) c[j] = static_cast<int8_t>(blk[2 + j]);
      return;
    case DType::Q4_0:
    case DType::Q4_1: {
      const bool q41 = type == DType::Q4_1;
      if (q41) *m = f16_at(blk + 2);
      const uint8_t* qs = blk + (q41 ? 4 : 2);
      for (int j = 0; j < 32; ++j) {
        const int nib = j < 16 ? (qs[j] & 15) : (qs[j - 16] >> 4);
        c[j] = q41 ? nib : nib - 8;
      }
      return;
    }
    default: {  // Q5_0, Q5_1
      const bool q51 = type == DType::Q5_1;
      if (q51) *m = f16_at(blk + 2);
      const uint8_t* qh = blk + (q51 ? 4 : 2);
      const uint8_t* qs = qh + 4;
      const uint32_t bits =
          qh[0] | (qh[1] << 8) | (qh[2] << 16) | (static_cast<uint32_t>(qh[3]) << 24);
      for (int j = 0; j < 32; ++j) {
        const int nib = j < 16 ? (qs[j] & 15) : (qs[j - 16] >> 4);
        const int v = nib | static_cast<int>(((bits >> j) & 1u) << 4);
        c[j] = q51 ? v : v - 16;
      }
      return;
    }
  }
}

}  // namespace

void matmul(DType type, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok,
            float* y) {
  const DTypeInfo& info = dtype_info(type);
  const int64_t row_bytes = n_in / info.block_elems * info.block_bytes;
  const auto* wb = static_cast<const uint8_t*>(w);
  if (has_q8_path(type)) {
    Q8Acts a;
    quantize_acts_q8(x, n_tok, n_in, a);
    const int64_t nb = n_in / 32;
    int c[32];
    for (int64_t o = 0; o < n_out; ++o) {
      for (int64_t t = 0; t < n_tok; ++t) {
        double acc = 0.0;
        for (int64_t b = 0; b < nb; ++b) {
          float d, m;
          block_codes(type, wb + o * row_bytes + b * info.block_bytes, c, &d, &m);
          int64_t dot = 0;
          for (int j = 0; j < 32; ++j)
            dot += static_cast<int64_t>(c[j]) * a.q[t * n_in + b * 32 + j];
          acc += static_cast<double>(d) * a.d[t * nb + b] * static_cast<double>(dot) +
                 static_cast<double>(m) * a.s[t * nb + b];
        }
        y[t * n_out + o] = static_cast<float>(acc);
      }
    }
    return;
  }
  // [n_tok, n_in] the activations as the engine sees them: x, or the K-quants' q8_K d * q.
  std::vector<double> xd(x, x + n_tok * n_in);
  if (has_q8k_path(type)) {
    Q8KActs a;
    quantize_acts_q8k(x, n_tok, n_in, a);
    for (int64_t i = 0; i < n_tok * n_in; ++i) xd[i] = static_cast<double>(a.d[i / 256]) * a.q[i];
  }
  std::vector<float> row(static_cast<size_t>(n_in));  // [n_in] one dequantized weight row
  for (int64_t o = 0; o < n_out; ++o) {
    ref::dequantize_row(type, wb + o * row_bytes, row.data(), n_in);
    for (int64_t t = 0; t < n_tok; ++t) {
      const double* xt = xd.data() + t * n_in;  // [n_in]
      double acc = 0.0;
      for (int64_t i = 0; i < n_in; ++i) acc += static_cast<double>(row[i]) * xt[i];
      y[t * n_out + o] = static_cast<float>(acc);
    }
  }
}

}  // namespace fasa::ref
