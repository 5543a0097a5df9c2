// Compound Contextual Agreement (FASA, arXiv 2602.03152, §3; docs/CALIBRATION.md):
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
// compound_agreement(q, keys, S ∪ {i}) (K = min(k, n) per query), ties (means within
// 1e-9 / n_queries) to the lower FC id; the summed score adds the FCs in the order chosen
// (exactly compound_agreement's sum for that order). n_max is clamped to [0, n_fc].
// single_ca: null, or set to [n_queries, n_fc] each query's CA of every FC alone (fc_agreement's
// ca), which the first step measures anyway.
// Cost: O(n_max · n_fc · Σ n). Queries that share a key array (same `keys` pointer) share one
// dims-major copy of it (as many rows as the longest of them sees), so one FC's logits read two contiguous rows; the
// K-th best of each candidate's summed score is found among the slots above a sampled threshold
// when K is small against n (exact either way).
CompoundSet greedy_compound_fcs(const std::vector<CaQuery>& queries, int head_dim,
                                const std::vector<FcDims>& fcs, int k, int n_max,
                                std::vector<float>* single_ca = nullptr);

// The greedy made cheap enough to run at a decode step (online calibration): the same steps, with
// two approximations that each become exact at their limit.
struct GreedySampling {
  // Each candidate's K-th best summed score is estimated from `keys` evenly spaced keys of the
  // query (slots floor(i n / keys)): the r-th best of them, r = max(1, round(K keys / n)); a
  // slot of the full head's top-K counts as agreeing when its score is >= that estimate (at
  // most K count). So each candidate reads keys + K scores per query instead of n, whatever n.
  // 0, or keys >= every query's n: greedy_compound_fcs itself. A query of at most `keys` keys
  // among longer ones samples every key (then only ties can differ from the exact count).
  int keys = 0;
  // With keys in use: the agreement is counted over `top_keys` of the full head's top-K (every
  // (K / top_keys)-th by slot) instead of all K of them, as a share of those; 0: all K.
  int top_keys = 0;
  // (Pruning the candidates after the first step to the 1.5 n_max FCs of best single CA lowered
  // online FASA's held-in recall: the greedy also picks FCs that are weak on their own.)
};

// greedy_compound_fcs with `sampling` (which it calls when no query needs a sample). single_ca
// as there (the estimate's, when sampled). Memory: per query (K + sampling.keys) x n_fc floats
// of per-FC logits. The sampled queries are split over the threads (parallel_for; serial inside
// another parallel region), with the same result.
CompoundSet greedy_compound_fcs_sampled(const std::vector<CaQuery>& queries, int head_dim,
                                        const std::vector<FcDims>& fcs, int k, int n_max,
                                        const GreedySampling& sampling,
                                        std::vector<float>* single_ca = nullptr);

}  // namespace fasa
