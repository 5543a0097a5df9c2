// Reference attention: two-pass softmax in double, for tests.
#include <cmath>
#include <vector>

#include "fasa/core/f16.h"
#include "fasa/kernels/attend.h"
#include "fasa/kernels/q8_0.h"
#include "support/ref/kernels_ref.h"

namespace fasa {

namespace {

const uint8_t* row_ptr(const void* base, int64_t slot, int hd, KvType t) {
  return static_cast<const uint8_t*>(base) + slot * kv_row_bytes(t, hd);
}

}  // namespace

namespace ref {

void attend_one(const float* q, const KvRows& rows, const int32_t* slots, int n, float scale,
                float* probs, float* out) {
  const int hd = rows.head_dim;
  auto load = [&](const void* base, int64_t s, int i) -> double {
    return kv_value(row_ptr(base, s, hd, rows.type), rows.type, i);
  };
  double mx = -INFINITY;
  for (int j = 0; j < n; ++j) {
    const int64_t s = slots ? slots[j] : j;
    double d = 0.0;
    for (int i = 0; i < hd; ++i) d += q[i] * load(rows.k, s, i);
    probs[j] = static_cast<float>(d * scale);
    mx = std::fmax(mx, probs[j]);
  }
  double sum = 0.0;
  for (int j = 0; j < n; ++j) sum += std::exp(probs[j] - mx);
  for (int j = 0; j < n; ++j) probs[j] = static_cast<float>(std::exp(probs[j] - mx) / sum);
  for (int i = 0; i < hd; ++i) {
    double acc = 0.0;
    for (int j = 0; j < n; ++j) acc += probs[j] * load(rows.v, slots ? slots[j] : j, i);
    out[i] = static_cast<float>(acc);
  }
}

void qk_scores_q8(const float* q, const KvRows& rows, const int32_t* slots, int n, float* scores) {
  const int hd = rows.head_dim, nb = hd / kQ8Block;
  std::vector<uint8_t> qq(q8_0_row_bytes(hd));
  quantize_row_q8_0(q, hd, qq.data());
  for (int j = 0; j < n; ++j) {
    const uint8_t* k = row_ptr(rows.k, slots ? slots[j] : j, hd, KvType::Q8_0);
    float acc = 0.0f;
    for (int b = 0; b < nb; ++b) {
      int32_t isum = 0;
      for (int i = 0; i < kQ8Block; ++i) {
        isum += int32_t{q8_0_block_qs(qq.data(), b)[i]} * q8_0_block_qs(k, b)[i];
      }
      const float dd = fp16_to_fp32(q8_0_block_d(qq.data(), b)) * fp16_to_fp32(q8_0_block_d(k, b));
      acc = std::fma(dd, static_cast<float>(isum), acc);
    }
    scores[j] = acc;
  }
}

}  // namespace ref

}  // namespace fasa
