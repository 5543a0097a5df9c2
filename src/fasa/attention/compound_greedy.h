// Compound Contextual Agreement (FASA, arXiv 2602.03152, §3; docs/POLICIES.md "Calibration"):
// the dominant FCs of a head chosen jointly, greedily, for the agreement of their summed
// per-FC logits with the full head's token ranking, rather than one by one.
#pragma once

#include <cstdint>
#include <vector>

#include "fasa/attention/frequency_chunks.h"

namespace fasa {

// One calibration query: a post-RoPE query and the keys it saw.
struct CaQuery {
  const float* q = nullptr;     // [head_dim]
  const float* keys = nullptr;  // [n, head_dim] f32
  int n = 0;
};

// The greedy order and its agreement curve.
struct CompoundSet {
  std::vector<int32_t> fcs;  // [n_max] FC ids in the order chosen
  std::vector<float> ca;     // [n_max] ca[s] = mean compound CA of fcs[0..s] over the queries
};

// Starts empty; each step adds the FC (not yet chosen) that maximizes the mean over `queries` of
// compound_agreement(q, keys, S ∪ {i}) (K = min(k, n) per query), ties (means within 1e-9 / n_queries) to the lower FC id; the
// summed score adds the FCs in the order chosen (exactly compound_agreement's sum for that
// order). n_max is clamped to [0, n_fc]. Cost: O(n_max · n_fc · Σ n) plus a top-K per
// (step, candidate, query).
CompoundSet greedy_compound_fcs(const std::vector<CaQuery>& queries, int head_dim,
                                const std::vector<FcDims>& fcs, int k, int n_max);

}  // namespace fasa
