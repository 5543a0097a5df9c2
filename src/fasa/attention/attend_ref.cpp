// Reference attention: two-pass softmax in double, for tests.
#include <cmath>

#include "fasa/attention/attend.h"
#include "fasa/core/f16.h"

namespace fasa {

namespace {

const uint8_t* row_ptr(const void* base, int64_t slot, int hd, KvType t) {
  return static_cast<const uint8_t*>(base) + slot * hd * (t == KvType::F16 ? 2 : 4);
}

}  // namespace

namespace ref {

void attend_one(const float* q, const KvRows& rows, const int32_t* slots, int n, float scale,
                float* probs, float* out) {
  const int hd = rows.head_dim;
  auto load = [&](const void* base, int64_t s, int i) -> double {
    const uint8_t* r = row_ptr(base, s, hd, rows.type);
    return rows.type == KvType::F16 ? fp16_to_fp32(reinterpret_cast<const uint16_t*>(r)[i])
                                    : reinterpret_cast<const float*>(r)[i];
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

}  // namespace ref

}  // namespace fasa
