// greedy_compound_fcs_sampled (compound_greedy.h): the compound CA greedy over a fixed sample of
// each query's keys.
#include <algorithm>

#include "fasa/attention/compound_greedy.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/kernels/attend.h"
#include "fasa/kernels/select.h"
#include "fasa/kernels/topk.h"

namespace fasa {

namespace {

constexpr double kTie = 1e-9;  // as greedy_compound_fcs: summed agreements this close tie

// One query's per-FC logits over the keys the greedy reads: its full top-K and its sample.
struct SampledQuery {
  int kk = 0;                       // K = min(k, n)
  int nt = 0;                       // top-K keys tracked: kk, or a sample of them
  int r = 0;                        // the sample's rank that estimates the K-th best
  int s = 0;                        // sampled keys: min(sample, n)
  std::vector<float> alpha_top;     // [n_fc, nt] per-FC logits of the tracked top-K keys
  std::vector<float> alpha_sample;  // [n_fc, s] per-FC logits of the sampled keys
  std::vector<float> sum_top;       // [nt] summed logits of the FCs chosen so far
  std::vector<float> sum_sample;    // [s]
};

// slots: the keys to read. alpha: [n_fc, slots.size()] of q's per-FC logits on them.
void logits_of(const CaQuery& cq, int head_dim, const std::vector<FcDims>& fcs,
               const std::vector<int32_t>& slots, std::vector<float>& alpha) {
  const size_t m = slots.size();
  alpha.resize(fcs.size() * m);
  for (size_t f = 0; f < fcs.size(); ++f) {
    const float qa = cq.q[fcs[f].a], qb = cq.q[fcs[f].b];
    for (size_t j = 0; j < m; ++j) {
      const float* kr = cq.keys + static_cast<size_t>(slots[j]) * head_dim;
      alpha[f * m + j] = qa * kr[fcs[f].a] + qb * kr[fcs[f].b];  // fc_logits' rounding
    }
  }
}

SampledQuery prepare(const CaQuery& cq, int head_dim, const std::vector<FcDims>& fcs, int k,
                     const GreedySampling& sampling) {
  const int top_sample = sampling.top_keys;
  SampledQuery s;
  s.kk = std::min(k, cq.n);
  std::vector<float> full(cq.n);  // [n]
  qk_scores(cq.q, KvRows{cq.keys, nullptr, KvType::F32, head_dim}, nullptr, cq.n, full.data());
  std::vector<int32_t> top;  // [kk] ascending
  top_k_indices(full.data(), cq.n, s.kk, top);
  s.s = std::min(sampling.keys, cq.n);  // a context of fewer keys: every key (then r = K)
  std::vector<int32_t> slots;           // [s] ascending
  for (int i = 0; i < s.s; ++i) slots.push_back(static_cast<int32_t>(int64_t{i} * cq.n / s.s));
  s.r = std::max(1, static_cast<int>(std::lround(static_cast<double>(s.kk) * s.s / cq.n)));
  if (top_sample > 0 && top_sample < s.kk) {  // every (kk / top_sample)-th, by slot
    std::vector<int32_t> every;
    for (int i = 0; i < top_sample; ++i) every.push_back(top[int64_t{i} * s.kk / top_sample]);
    top.swap(every);
  }
  s.nt = static_cast<int>(top.size());
  logits_of(cq, head_dim, fcs, top, s.alpha_top);
  s.sum_top.assign(s.nt, 0.0f);
  logits_of(cq, head_dim, fcs, slots, s.alpha_sample);
  s.sum_sample.assign(s.s, 0.0f);
  return s;
}

// How many of the full top-K agree with the chosen set plus FC f. scratch: [2 s + 16].
int hits_with(const SampledQuery& s, int f, std::vector<float>& scratch) {
  if (s.kk <= 0) return 0;
  scratch.resize(2 * static_cast<size_t>(s.s) + 16);
  const float* a = s.alpha_sample.data() + static_cast<size_t>(f) * s.s;
  // The r-th best sampled score of the set plus f estimates its K-th best over every key.
  const float tau = sum_rth_largest(s.sum_sample.data(), a, s.s, s.r, scratch.data());
  int hits = 0;
  const float* at = s.alpha_top.data() + static_cast<size_t>(f) * s.nt;
  for (int j = 0; j < s.nt; ++j) hits += s.sum_top[j] + at[j] >= tau;
  return std::min(hits, s.nt);
}

void add_chosen(SampledQuery& s, int f) {
  const float* a = s.alpha_sample.data() + static_cast<size_t>(f) * s.s;
  for (int j = 0; j < s.s; ++j) s.sum_sample[j] += a[j];
  const float* at = s.alpha_top.data() + static_cast<size_t>(f) * s.nt;
  for (int j = 0; j < s.nt; ++j) s.sum_top[j] += at[j];
}

}  // namespace

CompoundSet greedy_compound_fcs_sampled(const std::vector<CaQuery>& queries, int head_dim,
                                        const std::vector<FcDims>& fcs, int k, int n_max,
                                        const GreedySampling& sampling,
                                        std::vector<float>* single_ca) {
  bool sampled = false;  // some query sees more keys than the sample
  for (const CaQuery& cq : queries) sampled |= sampling.keys > 0 && cq.n > sampling.keys;
  if (!sampled) return greedy_compound_fcs(queries, head_dim, fcs, k, n_max, single_ca);
  const int n_fc = static_cast<int>(fcs.size());
  const int64_t n_q = static_cast<int64_t>(queries.size());
  n_max = std::clamp(n_max, 0, n_fc);
  std::vector<SampledQuery> states(n_q);
  parallel_for(n_q,
               [&](int64_t j) { states[j] = prepare(queries[j], head_dim, fcs, k, sampling); });
  if (single_ca) single_ca->assign(queries.size() * n_fc, 0.0f);
  std::vector<char> candidate(n_fc, 1);  // [n_fc] not chosen yet
  std::vector<double> ca(n_q * n_fc);    // [n_q, n_fc] this step's agreement per query
  std::vector<double> step_sum(n_fc);    // [n_fc] summed over the queries, in their order
  CompoundSet out;
  const int steps = single_ca ? std::max(n_max, 1) : n_max;
  for (int step = 0; step < steps; ++step) {
    parallel_for(n_q, [&](int64_t j) {  // each query its own row: the same bits on any threads
      const SampledQuery& s = states[j];
      std::vector<float> scratch;
      for (int f = 0; f < n_fc; ++f) {
        if (!candidate[f]) continue;
        ca[j * n_fc + f] = s.kk > 0 ? static_cast<double>(hits_with(s, f, scratch)) / s.nt : 0.0;
      }
    });
    std::fill(step_sum.begin(), step_sum.end(), 0.0);
    for (int64_t j = 0; j < n_q; ++j) {
      for (int f = 0; f < n_fc; ++f) {
        if (candidate[f]) step_sum[f] += ca[j * n_fc + f];
      }
    }
    if (step == 0 && single_ca) {
      for (size_t i = 0; i < ca.size(); ++i) (*single_ca)[i] = static_cast<float>(ca[i]);
    }
    if (step >= n_max) break;
    int best = -1;
    double best_sum = -1.0;
    for (int f = 0; f < n_fc; ++f) {
      if (candidate[f] && step_sum[f] > best_sum + kTie) {
        best = f;
        best_sum = step_sum[f];
      }
    }
    FASA_CHECK(best >= 0);
    candidate[best] = 0;
    parallel_for(n_q, [&](int64_t j) { add_chosen(states[j], best); });
    out.fcs.push_back(best);
    out.ca.push_back(n_q == 0 ? 0.0f : static_cast<float>(best_sum / static_cast<double>(n_q)));
  }
  return out;
}

}  // namespace fasa
