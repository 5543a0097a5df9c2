#include "fasa/attention/compound_greedy.h"

#include <algorithm>
#include <map>

#include "fasa/core/error.h"
#include "fasa/kernels/select.h"
#include "fasa/kernels/topk.h"

namespace fasa {

namespace {

constexpr double kTie = 1e-9;  // summed agreements closer than this are a tie (lower FC wins)

// Keys shared by several queries, dims-major, so that one FC's logits over every slot read two
// contiguous rows: dim d of slot t is t_keys[d * n + t].
struct KeyBlock {
  int n = 0;                  // slots held (the most any of its queries sees)
  std::vector<float> t_keys;  // [head_dim, n]
};

// What the greedy keeps per query: the full head's top-K as a mask and the running sum of the
// chosen FCs' logits.
struct QueryState {
  const float* q = nullptr;  // [head_dim]
  const KeyBlock* keys = nullptr;
  int n = 0, kk = 0;
  std::vector<char> in_full_top;  // [n] 1 where the slot is in the full logits' top-K
  std::vector<float> sum;         // [n] summed logits of the FCs chosen so far
};

// Scratch of one greedy run.
struct Scratch {
  std::vector<float> v, vals;  // [n], [2 n + 16] (rth_largest's scratch)
};

QueryState prepare(const CaQuery& cq, const KeyBlock& kb, int head_dim, int k) {
  QueryState s;
  s.q = cq.q;
  s.keys = &kb;
  s.n = cq.n;
  s.kk = std::min(k, cq.n);
  std::vector<float> full(cq.n);  // [n]
  for (int t = 0; t < cq.n; ++t) {
    const float* kr = cq.keys + static_cast<size_t>(t) * head_dim;
    float x = 0.0f;
    for (int i = 0; i < head_dim; ++i) x += cq.q[i] * kr[i];
    full[t] = x;
  }
  std::vector<int32_t> top;
  top_k_indices(full.data(), cq.n, s.kk, top);
  s.in_full_top.assign(cq.n, 0);
  for (int32_t t : top) s.in_full_top[t] = 1;
  s.sum.assign(cq.n, 0.0f);
  return s;
}

// How many of the kk best of v[0..n) (ties: the lower index, as top_k_indices ranks) are in the
// full head's top-K. The kk-th best value by rth_largest (kernels/select.h), then one pass
// counts the values above it and those equal to it; only when more values equal it than the
// kk best can hold does a second pass take the equal ones by index.
int top_k_hits(const float* v, int n, int kk, const char* in_full_top, Scratch& s) {
  s.vals.resize(2 * static_cast<size_t>(n) + 16);
  const float kth = rth_largest(v, n, kk, s.vals.data());
  int above = 0, hits = 0, equal = 0, equal_hits = 0;
  for (int t = 0; t < n; ++t) {
    const bool gt = v[t] > kth, eq = v[t] == kth;
    above += gt;
    hits += gt && in_full_top[t];
    equal += eq;
    equal_hits += eq && in_full_top[t];
  }
  int ties_left = kk - above;  // >= 1: the kk-th best itself
  if (equal <= ties_left) return hits + equal_hits;
  for (int t = 0; t < n && ties_left > 0; ++t) {
    if (v[t] == kth) {
      --ties_left;
      hits += in_full_top[t];
    }
  }
  return hits;
}

// Hits of the chosen set plus FC i (dims a, b) for one query.
int hits_with(const QueryState& s, int a, int b, Scratch& sc) {
  if (s.kk <= 0) return 0;
  sc.v.resize(s.n);
  float* v = sc.v.data();
  const float qa = s.q[a], qb = s.q[b];
  const float* ka = s.keys->t_keys.data() + static_cast<size_t>(a) * s.keys->n;
  const float* kb = s.keys->t_keys.data() + static_cast<size_t>(b) * s.keys->n;
  const float* sum = s.sum.data();
  // The same roundings as fc_logits then the sum: (q_a k_a + q_b k_b), added to the sum.
  for (int t = 0; t < s.n; ++t) v[t] = sum[t] + (qa * ka[t] + qb * kb[t]);
  return top_k_hits(v, s.n, s.kk, s.in_full_top.data(), sc);
}

}  // namespace

CompoundSet greedy_compound_fcs(const std::vector<CaQuery>& queries, int head_dim,
                                const std::vector<FcDims>& fcs, int k, int n_max,
                                std::vector<float>* single_ca) {
  const int n_fc = static_cast<int>(fcs.size());
  n_max = std::clamp(n_max, 0, n_fc);
  // One dims-major copy of each distinct key array, as long as its longest query needs.
  std::map<const float*, KeyBlock> blocks;
  for (const CaQuery& cq : queries) {
    KeyBlock& kb = blocks[cq.keys];
    kb.n = std::max(kb.n, cq.n);
  }
  for (auto& [src, kb] : blocks) {
    kb.t_keys.resize(static_cast<size_t>(head_dim) * kb.n);
    for (int t = 0; t < kb.n; ++t) {
      for (int d = 0; d < head_dim; ++d) {
        kb.t_keys[static_cast<size_t>(d) * kb.n + t] = src[static_cast<size_t>(t) * head_dim + d];
      }
    }
  }
  std::vector<QueryState> states;
  states.reserve(queries.size());
  for (const CaQuery& cq : queries) {
    states.push_back(prepare(cq, blocks.at(cq.keys), head_dim, k));
  }
  if (single_ca) single_ca->assign(queries.size() * n_fc, 0.0f);
  CompoundSet out;
  std::vector<char> chosen(n_fc, 0);
  std::vector<double> step_sum(n_fc);  // [n_fc] this step's summed agreement per candidate
  Scratch sc;
  // Step 0 measures every FC alone, which is also each query's single-FC CA.
  const int steps = single_ca ? std::max(n_max, 1) : n_max;
  for (int step = 0; step < steps; ++step) {
    std::fill(step_sum.begin(), step_sum.end(), 0.0);
    for (size_t j = 0; j < states.size(); ++j) {
      const QueryState& s = states[j];
      for (int i = 0; i < n_fc; ++i) {
        if (chosen[i]) continue;
        const double ca =
            s.kk > 0 ? static_cast<double>(hits_with(s, fcs[i].a, fcs[i].b, sc)) / s.kk : 0.0;
        step_sum[i] += ca;
        if (step == 0 && single_ca) (*single_ca)[j * n_fc + i] = static_cast<float>(ca);
      }
    }
    if (step >= n_max) break;
    int best = -1;
    double best_sum = -1.0;
    for (int i = 0; i < n_fc; ++i) {
      if (chosen[i]) continue;
      if (step_sum[i] > best_sum + kTie) {  // a sum of doubles: equal agreements may differ
        best = i;
        best_sum = step_sum[i];
      }
    }
    FASA_CHECK(best >= 0);
    chosen[best] = 1;
    for (QueryState& s : states) {
      const float qa = s.q[fcs[best].a], qb = s.q[fcs[best].b];
      const float* ka = s.keys->t_keys.data() + static_cast<size_t>(fcs[best].a) * s.keys->n;
      const float* kb = s.keys->t_keys.data() + static_cast<size_t>(fcs[best].b) * s.keys->n;
      for (int t = 0; t < s.n; ++t) s.sum[t] += qa * ka[t] + qb * kb[t];
    }
    out.fcs.push_back(best);
    out.ca.push_back(
        states.empty() ? 0.0f : static_cast<float>(best_sum / static_cast<double>(states.size())));
  }
  return out;
}

}  // namespace fasa
