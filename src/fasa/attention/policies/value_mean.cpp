#include "fasa/attention/policies/value_mean.h"

#include <algorithm>
#include <cmath>

#include "fasa/core/error.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/ops.h"

namespace fasa {

namespace {

// Value c of row t of a V row array of the cache's type, as a float (Q8_0: d * q).
inline float elem(const KvCache& cache, const void* rows, size_t t, int c) {
  return kv_value(static_cast<const uint8_t*>(rows) + t * cache.row_bytes(), cache.type(), c);
}

}  // namespace

ValueMeans::ValueMeans(const AttnShape& shape) : shape_(shape), layer_row_(shape.n_layers, -1) {
  const std::vector<int> global = shape.global_layers();
  for (size_t i = 0; i < global.size(); ++i) layer_row_[global[i]] = static_cast<int>(i);
  groups_.resize(global.size() * shape.n_kv_heads);
}

ValueMeans::Group& ValueMeans::group(int layer, int g) {
  FASA_CHECK(layer_row_[layer] >= 0);
  return groups_[static_cast<size_t>(layer_row_[layer]) * shape_.n_kv_heads + g];
}

void ValueMeans::on_append(const KvCache& cache, int layer, int first_slot, int n) {
  if (layer_row_[layer] < 0) return;
  for (int g = 0; g < shape_.n_kv_heads; ++g) {
    Group& gr = group(layer, g);
    if (first_slot != gr.n_summed) {
      gr.v_sum.assign(shape_.head_dim, 0.0);
      gr.n_summed = 0;
      add_values(cache, layer, g, 0, first_slot, gr);
    }
    add_values(cache, layer, g, first_slot, first_slot + n, gr);
  }
}

void ValueMeans::add_values(const KvCache& cache, int layer, int g, int s0, int s1,
                            Group& gr) const {
  const int hd = shape_.head_dim;
  const void* v = cache.v_rows(layer, g);  // [capacity] rows
  if (gr.v_sum.size() != static_cast<size_t>(hd)) gr.v_sum.assign(hd, 0.0);
  for (int s = s0; s < s1; ++s) {
    for (int c = 0; c < hd; ++c) gr.v_sum[c] += elem(cache, v, s, c);
  }
  gr.n_summed = std::max(gr.n_summed, s1);
}

// The running sum (which covers exactly the visible slots at a decode step), or, should it
// not, a sum from the cache.
const float* ValueMeans::mean(const AttnQuery& q) {
  const int hd = shape_.head_dim, n = q.n_visible;
  Group& gr = group(q.layer, q.kv_head);
  gr.mean.resize(hd);
  if (gr.n_summed == n && gr.v_sum.size() == static_cast<size_t>(hd)) {
    for (int c = 0; c < hd; ++c) gr.mean[c] = static_cast<float>(gr.v_sum[c] / n);
    return gr.mean.data();
  }
  Group fresh;
  add_values(*q.cache, q.layer, q.kv_head, 0, n, fresh);
  for (int c = 0; c < hd; ++c) gr.mean[c] = static_cast<float>(fresh.v_sum[c] / n);
  return gr.mean.data();
}

uint64_t ValueMeans::resident_bytes() const {
  return groups_.size() * shape_.head_dim * sizeof(double);
}

void ValueMeans::save_point() {
  saved_.resize(groups_.size());
  for (size_t i = 0; i < groups_.size(); ++i) saved_[i] = {groups_[i].v_sum, groups_[i].n_summed};
}

void ValueMeans::rollback(int n) {
  FASA_CHECK(saved_.size() == groups_.size());
  for (size_t i = 0; i < groups_.size(); ++i) {
    groups_[i].v_sum = saved_[i].v_sum;
    groups_[i].n_summed = saved_[i].n_summed;
    FASA_CHECK(groups_[i].n_summed <= n);
  }
}

double subset_temperature(const float* q, const int32_t* dims, int n_dims, int head_dim) {
  double sum_all = 0.0, sum_sub = 0.0;
  for (int c = 0; c < head_dim; ++c) sum_all += std::fabs(q[c]);
  for (int i = 0; i < n_dims; ++i) sum_sub += std::fabs(q[dims[i]]);
  return sum_all > 0.0 ? std::sqrt(head_dim * sum_sub / sum_all) : 1.0;
}

SoftmaxSum softmax_sum(const float* logits, int n, double temperature, float mx) {
  SoftmaxSum s;
  s.a = static_cast<float>(1.0 / temperature);
  s.m = mx * s.a;
  s.z = exp_sum_fast(logits, s.a, s.m, n);
  return s;
}

float softmax_mass_on(const float* logits, const SoftmaxSum& s, const std::vector<int32_t>& slots) {
  struct GatherScratch {
    std::vector<float> picked;  // [slots] their logits
  };
  auto& picked = workspace_object<GatherScratch>().picked;
  picked.resize(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) picked[i] = logits[slots[i]];
  const float mass = exp_sum_fast(picked.data(), s.a, s.m, static_cast<int64_t>(picked.size()));
  return std::min(mass / s.z, 1.0f);
}

float softmax_mass_on(const float* logits, int n, double temperature,
                      const std::vector<int32_t>& slots) {
  return softmax_mass_on(logits, softmax_sum(logits, n, temperature, max_value(logits, n)), slots);
}

}  // namespace fasa
