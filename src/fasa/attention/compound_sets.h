// Gathers what the compound CA greedy needs during a calibration run (each decode-step query
// per (global layer, query head), each sample's keys) and, at the end, runs the greedy per query
// head and per kv head (the group's queries together) into the Calibration (version 4 fields).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "fasa/attention/calibration.h"

namespace fasa {

class CompoundRecorder {
 public:
  CompoundRecorder(const AttnShape& shape, const std::vector<int>& layers);
  // A decode-step query of (layer_row, head) that saw slots [0, n_visible) of the current
  // sample. Calls for different heads may run concurrently. q: [head_dim]
  void add_query(int layer_row, int head, int n_visible, const float* q);
  // The current sample ends: keeps its keys (the cache's n_used slots, f32) for its queries.
  void end_sample(const KvCache& cache);
  // Sets c.n_compound (n_compound FCs per set, clamped to [1, n_fc]) and the four compound
  // arrays; runs (layer, head) and (layer, kv head) jobs in parallel. `progress(done, total,
  // share)` after each job, share = the jobs done's part of the work (each job weighs its query
  // count: a kv head's job has its group's queries); may be null; called under a lock, from the
  // worker that finished it.
  void fill(Calibration& c, int n_compound,
            const std::function<void(int, int, double)>& progress = nullptr) const;

 private:
  struct Queries {
    std::vector<float> q;        // [n_queries, head_dim]
    std::vector<int> sample;     // [n_queries]
    std::vector<int> n_visible;  // [n_queries]
  };
  AttnShape shape_;
  std::vector<int> layers_;               // [n_global]
  std::vector<Queries> queries_;          // [n_global, n_heads]
  std::vector<std::vector<float>> keys_;  // [samples][n_global, n_kv_heads, max_visible, head_dim]
  std::vector<int> max_visible_;          // [samples] slots kept per sample
};

}  // namespace fasa
