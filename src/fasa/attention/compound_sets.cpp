#include "fasa/attention/compound_sets.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "fasa/attention/compound_greedy.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"

namespace fasa {

CompoundRecorder::CompoundRecorder(const AttnShape& shape, const std::vector<int>& layers)
    : shape_(shape), layers_(layers), queries_(layers.size() * shape.n_heads) {}

void CompoundRecorder::add_query(int layer_row, int head, int n_visible, const float* q) {
  Queries& qs = queries_[static_cast<size_t>(layer_row) * shape_.n_heads + head];
  qs.q.insert(qs.q.end(), q, q + shape_.head_dim);
  qs.sample.push_back(static_cast<int>(keys_.size()));
  qs.n_visible.push_back(n_visible);
}

void CompoundRecorder::end_sample(const KvCache& cache) {
  FASA_CHECK(cache.type() == KvType::F32);
  const int n = cache.n_used(), hd = shape_.head_dim;
  std::vector<float>& keys =
      keys_.emplace_back(layers_.size() * shape_.n_kv_heads * static_cast<size_t>(n) * hd);
  for (size_t r = 0; r < layers_.size(); ++r) {
    for (int g = 0; g < shape_.n_kv_heads; ++g) {
      const auto* rows = static_cast<const float*>(cache.k_rows(layers_[r], g));  // [cap, hd]
      std::memcpy(keys.data() + (r * shape_.n_kv_heads + g) * n * hd, rows,
                  static_cast<size_t>(n) * hd * sizeof(float));
    }
  }
  max_visible_.push_back(n);
}

void CompoundRecorder::fill(Calibration& c, int n_compound,
                            const std::function<void(int, int, double)>& progress) const {
  const int n_fc = c.n_fc(), hd = shape_.head_dim, ng = shape_.n_group();
  const int n_global = static_cast<int>(layers_.size());
  n_compound = std::clamp(n_compound, 1, n_fc);
  c.n_compound = n_compound;
  c.compound.assign(queries_.size() * n_compound, 0);
  c.compound_ca.assign(queries_.size() * n_compound, 0.0f);
  const size_t n_groups = static_cast<size_t>(n_global) * shape_.n_kv_heads;
  c.group_compound.assign(n_groups * n_compound, 0);
  c.group_compound_ca.assign(n_groups * n_compound, 0.0f);
  // The queries of head (r, h) with the keys each saw.
  auto add_head = [&](int r, int h, std::vector<CaQuery>& out) {
    const Queries& qs = queries_[static_cast<size_t>(r) * shape_.n_heads + h];
    const int g = h / ng;
    for (size_t i = 0; i < qs.sample.size(); ++i) {
      const int s = qs.sample[i];
      FASA_CHECK(s < static_cast<int>(keys_.size()) && qs.n_visible[i] <= max_visible_[s]);
      const float* keys =
          keys_[s].data() + (static_cast<size_t>(r) * shape_.n_kv_heads + g) * max_visible_[s] * hd;
      out.push_back(CaQuery{qs.q.data() + i * hd, keys, qs.n_visible[i]});
    }
  };
  // Jobs of similar size in each loop (a group's job has n_group heads' queries).
  auto run = [&](bool heads, int r, int h, int64_t j) {
    std::vector<CaQuery> qs;
    if (heads) {
      add_head(r, h, qs);
    } else {
      for (int head = h * ng; head < (h + 1) * ng; ++head) add_head(r, head, qs);
    }
    const CompoundSet set = greedy_compound_fcs(qs, hd, c.fcs, c.k, n_compound);
    std::copy(set.fcs.begin(), set.fcs.end(),
              (heads ? c.compound : c.group_compound).begin() + j * n_compound);
    std::copy(set.ca.begin(), set.ca.end(),
              (heads ? c.compound_ca : c.group_compound_ca).begin() + j * n_compound);
  };
  const int n_jobs = static_cast<int>(queries_.size() + n_groups);
  // The work: each job's queries (a head's, or its group's), about what its greedy costs.
  auto head_queries = [&](int r, int h) {
    return static_cast<double>(queries_[static_cast<size_t>(r) * shape_.n_heads + h].sample.size());
  };
  double total_work = 0.0;
  for (size_t j = 0; j < queries_.size(); ++j) total_work += 2.0 * queries_[j].sample.size();
  std::mutex mu;
  int done = 0;
  double work_done = 0.0;
  auto finished = [&](double work) {
    if (!progress) return;
    std::lock_guard<std::mutex> lock(mu);
    work_done += work;
    progress(++done, n_jobs, total_work > 0.0 ? std::min(work_done / total_work, 1.0) : 1.0);
  };
  parallel_for(static_cast<int64_t>(queries_.size()), [&](int64_t j) {
    const int r = static_cast<int>(j / shape_.n_heads), h = static_cast<int>(j % shape_.n_heads);
    run(true, r, h, j);
    finished(head_queries(r, h));
  });
  parallel_for(static_cast<int64_t>(n_groups), [&](int64_t j) {
    const int r = static_cast<int>(j / shape_.n_kv_heads),
              g = static_cast<int>(j % shape_.n_kv_heads);
    run(false, r, g, j);
    double work = 0.0;
    for (int h = g * ng; h < (g + 1) * ng; ++h) work += head_queries(r, h);
    finished(work);
  });
}

}  // namespace fasa
