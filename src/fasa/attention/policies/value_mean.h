// SparQ's mean-value reallocation (Ribar et al., ICML 2024), shared by `sparq` and `fasa`
// (mean_value=on): a head's output over its selected slots o_B is mixed with the mean of V over
// every visible slot, alpha * o_B + (1 - alpha) * mean_V, alpha = the selected slots' share of
// the softmax of the approximate logits the policy ranked by (the driver mixes:
// Selection::mix_alpha / mix_value).
#pragma once

#include <cstdint>
#include <vector>

#include "fasa/attention/policy.h"

namespace fasa {

// The running sum of V per (global layer, kv head), kept by on_append, and its mean.
class ValueMeans {
 public:
  explicit ValueMeans(const AttnShape& shape);
  // Slots [first_slot, first_slot + n) of a global layer were written. Appends continue the
  // sum; a range that does not start where it ends (a rewrite) resums the earlier slots.
  void on_append(const KvCache& cache, int layer, int first_slot, int n);
  // Mean of V over q's visible slots: [head_dim], valid until the next call for q's
  // (layer, kv head). Calls for different kv heads may run concurrently.
  const float* mean(const AttnQuery& q);
  uint64_t resident_bytes() const;  // head_dim doubles per (global layer, kv head)
  // Lossless decoding (AttentionPolicy::save_point / rollback): the sums as they were at the
  // save point (a resum from the cache would cost O(n) per rollback); the cache then holds n
  // slots, at least the ones summed then.
  void save_point();
  void rollback(int n);

 private:
  struct Group {
    std::vector<double> v_sum;  // [head_dim] sum of V over slots [0, n_summed)
    int n_summed = 0;
    std::vector<float> mean;  // [head_dim] the last mean() (mix_value points here)
  };
  Group& group(int layer, int g);
  void add_values(const KvCache& cache, int layer, int g, int s0, int s1, Group& gr) const;

  AttnShape shape_;
  std::vector<int> layer_row_;  // [n_layers] index among the global layers, -1 sliding-window
  std::vector<Group> groups_;   // [n_global, n_kv_heads]
  struct Saved {
    std::vector<double> v_sum;
    int n_summed = 0;
  };
  std::vector<Saved> saved_;  // [n_global, n_kv_heads] at the save point
};

// SparQ's softmax temperature for logits summed over a subset of q's dims:
// sqrt(head_dim * sum_{c in dims} |q_c| / sum_c |q_c|) (1 when q is zero). q: [head_dim]
double subset_temperature(const float* q, const int32_t* dims, int n_dims, int head_dim);

// The softmax of logits / temperature over [0, n), kept as its shift and sum rather than
// stored: p[t] = e^(logits[t] * a - m) / z. Its masses need about 1e-5, not softmax_exp's
// 2 ulp: the sums are exp_sum_fast's (half the work on every cached token).
struct SoftmaxSum {
  float a = 1.0f;  // 1 / temperature
  float m = 0.0f;  // max(logits) * a
  float z = 1.0f;  // exp_sum_fast(logits, a, m, n)
};
// mx: max(logits), which the caller has found.
SoftmaxSum softmax_sum(const float* logits, int n, double temperature, float mx);

// That softmax's mass on `slots` (<= 1): the sum above, then the terms of the slots alone
// (gathered, summed as exp_sum_fast sums). logits: [n]
float softmax_mass_on(const float* logits, const SoftmaxSum& s, const std::vector<int32_t>& slots);
// The same from the logits alone.
float softmax_mass_on(const float* logits, int n, double temperature,
                      const std::vector<int32_t>& slots);

}  // namespace fasa
