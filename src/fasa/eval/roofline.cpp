#include "fasa/eval/roofline.h"

namespace fasa {

Roofline bandwidth_roofline(uint64_t weight_bytes, double kv_read_per_token, double read_gb_s,
                            double measured_tokens_per_s) {
  Roofline r;
  r.bytes_per_token = static_cast<double>(weight_bytes) + kv_read_per_token;
  r.tokens_per_s = r.bytes_per_token > 0.0 ? read_gb_s * 1e9 / r.bytes_per_token : 0.0;
  r.fraction = r.tokens_per_s > 0.0 ? measured_tokens_per_s / r.tokens_per_s : 0.0;
  return r;
}

}  // namespace fasa
