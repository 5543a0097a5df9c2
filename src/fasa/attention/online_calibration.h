// Online calibration (calib=online): a Calibration made from the prompt being answered instead of
// a calibration text. The policy keeps the post-RoPE queries of the last `window` positions it
// saw (the prompt's last positions during the dense prefill, or its first decode steps where no
// prefill was seen) per global layer; calibrate_online then measures, against every key each of
// them saw in the cache, what `fasa calibrate` measures from its decode steps: each FC's
// Contextual Agreement per (layer, query head), Double Sparsity's channel importance (each query
// with its own token's key) and the greedy compound CA sets per kv-head group (and, if asked, per
// query head). The result serves fasa_head_dims and heavy_channels exactly as a file would.
#pragma once

#include <cstdint>
#include <vector>

#include "fasa/attention/calibration.h"
#include "fasa/attention/policy.h"

namespace fasa {

struct OnlineCalibrationSpec {
  int window = 32;         // the newest queries kept per global layer
  int spread = 0;          // and up to this many more, spread evenly over the whole prompt
  int refresh = 0;         // calibrate again every `refresh` decode steps (0: never)
  int k = 256;             // CA's top-K (min(k, n/4) for n prompt keys), as calibrate's --k
  bool agreement = true;   // measure each FC's CA (false: channel importance only)
  int n_compound = 0;      // FCs per compound set; 0: no compound sets (needs agreement)
  bool head_sets = false;  // per-query-head compound sets too (fc_sets=head, layer_budget)
  // The greedy's key sample (GreedySampling::keys; 0: every key, the exact greedy), and the
  // full head's top-K keys it counts agreement over (GreedySampling::top_keys; 0: all K).
  int key_sample = 512;
  int top_sample = 64;
};

// The last `window` queries of each global layer, with the slot each was the query of (it saw
// the keys of slots [0, slot]); with `spread` > 0 also, of the older ones, those of the slots
// that are multiples of a stride s: the smallest power of two with at most `spread` multiples
// in [0, newest slot]. Which queries are held depends only on the slots added (not on how they
// were split into calls), and a window fed only the queries another one holds ends up holding
// the same ones (a prompt-cache file saves just those).
class QueryWindow {
 public:
  QueryWindow(const AttnShape& shape, int window, int spread = 0);
  // Queries of slots first_slot.. of global layer `layer_row` (its index in global_layers()).
  // q: [n_tok, n_heads, head_dim]. Slots ascend from call to call.
  void add(int layer_row, int first_slot, int n_tok, const float* q);
  // Every global layer holds at least `window` queries.
  bool full() const;
  // Queries held by global layer `layer_row`.
  int size(int layer_row) const { return static_cast<int>(slots_[layer_row].size()); }
  int window() const { return window_; }
  // Query j (oldest first) of (layer_row, head): [head_dim]; its slot.
  const float* query(int layer_row, int j, int head) const;
  int slot(int layer_row, int j) const { return slots_[layer_row][j]; }
  // Bytes held.
  uint64_t bytes() const;
  void clear();
  // Drops the queries of slots >= n (a lossless rollback).
  void truncate(int n);

 private:
  // The stride whose multiples the older queries keep when `newest` is the newest slot (0:
  // none, spread 0).
  int64_t stride(int newest) const;

  AttnShape shape_;
  int window_;
  int spread_;
  std::vector<std::vector<float>> q_;        // [n_global][held, n_heads, head_dim]
  std::vector<std::vector<int32_t>> slots_;  // [n_global][held], ascending
};

// Measures the calibration of every global layer from the window's queries and the cache's keys
// (any KvType; rows read as f32). Each (layer, kv head) splits its queries over the threads
// (parallel_for: call it from a serial context to use them). The header (shape, FCs, RoPE layout, k) is ctx's; model_sha256 and the
// text fields are empty, n_samples = 1, steps = the queries per layer. Throws fasa::Error when a
// layer holds no query.
Calibration calibrate_online(const PolicyContext& ctx, const OnlineCalibrationSpec& spec,
                             const QueryWindow& w, const KvCache& cache);

}  // namespace fasa
