// The bandwidth roofline of a decode (tg) measurement: decoding one token reads every weight once
// plus the KV bytes attention reads, so a machine that reads read_gb_s GB/s can decode at most
// read_gb_s * 1e9 / (weight bytes + KV bytes) tokens per second.
#pragma once

#include <cstdint>

namespace fasa {

struct Roofline {
  double bytes_per_token = 0.0;  // weight bytes + KV bytes read per token
  double tokens_per_s = 0.0;     // the bandwidth-bound speed
  double fraction = 0.0;         // measured / bound (0 when the bound is 0)
};

Roofline bandwidth_roofline(uint64_t weight_bytes, double kv_read_per_token, double read_gb_s,
                            double measured_tokens_per_s);

}  // namespace fasa
