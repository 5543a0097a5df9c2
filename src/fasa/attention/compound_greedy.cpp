#include "fasa/attention/compound_greedy.h"

#include <algorithm>
#include <functional>

#include "fasa/kernels/topk.h"

namespace fasa {

namespace {

constexpr double kTie = 1e-9;  // summed agreements closer than this are a tie (lower FC wins)

// What the greedy keeps per query: the full head's top-K as a mask, every FC's logits and the
// running sum of the chosen FCs' logits.
struct QueryState {
  int n = 0, kk = 0;
  std::vector<char> in_full_top;  // [n] 1 where the slot is in the full logits' top-K
  std::vector<float> alpha;       // [n_fc, n] per-FC logits
  std::vector<float> sum;         // [n] summed logits of the FCs chosen so far
};

QueryState prepare(const CaQuery& cq, int head_dim, const std::vector<FcDims>& fcs, int k) {
  QueryState s;
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
  s.alpha.resize(fcs.size() * static_cast<size_t>(cq.n));
  fc_logits(cq.q, cq.keys, cq.n, head_dim, fcs, s.alpha.data());
  s.sum.assign(cq.n, 0.0f);
  return s;
}

// How many of the kk best of score[0..n) (ties: the lower index, as top_k_indices ranks) are
// in the full head's top-K. One nth_element over the values finds the kk-th best value; the
// slots above it are in, and of those equal to it the lowest-indexed fill the rest.
// buf: scratch [n]
int top_k_hits(const float* score, int n, int kk, const char* in_full_top,
               std::vector<float>& buf) {
  buf.assign(score, score + n);
  std::nth_element(buf.begin(), buf.begin() + (kk - 1), buf.end(), std::greater<float>());
  const float kth = buf[kk - 1];
  int above = 0;
  for (int t = 0; t < n; ++t) above += score[t] > kth;
  int ties_left = kk - above, hits = 0;
  for (int t = 0; t < n; ++t) {
    const bool in = score[t] > kth || (score[t] == kth && ties_left-- > 0);
    hits += in && in_full_top[t];
  }
  return hits;
}

// CA of the chosen set plus FC i for one query. tmp, buf: scratch.
double agreement_with(const QueryState& s, int i, std::vector<float>& tmp,
                      std::vector<float>& buf) {
  if (s.kk <= 0) return 0.0;
  tmp.resize(s.n);
  const float* a = s.alpha.data() + static_cast<size_t>(i) * s.n;
  for (int t = 0; t < s.n; ++t) tmp[t] = s.sum[t] + a[t];
  return static_cast<double>(top_k_hits(tmp.data(), s.n, s.kk, s.in_full_top.data(), buf)) / s.kk;
}

}  // namespace

CompoundSet greedy_compound_fcs(const std::vector<CaQuery>& queries, int head_dim,
                                const std::vector<FcDims>& fcs, int k, int n_max) {
  const int n_fc = static_cast<int>(fcs.size());
  n_max = std::clamp(n_max, 0, n_fc);
  std::vector<QueryState> states;
  states.reserve(queries.size());
  for (const CaQuery& cq : queries) states.push_back(prepare(cq, head_dim, fcs, k));
  CompoundSet out;
  std::vector<char> chosen(n_fc, 0);
  std::vector<float> tmp, buf;
  for (int step = 0; step < n_max; ++step) {
    int best = -1;
    double best_sum = -1.0;
    for (int i = 0; i < n_fc; ++i) {
      if (chosen[i]) continue;
      double sum = 0.0;
      for (const QueryState& s : states) sum += agreement_with(s, i, tmp, buf);
      if (sum > best_sum + kTie) {  // a sum of doubles: equal agreements may differ by rounding
        best = i;
        best_sum = sum;
      }
    }
    chosen[best] = 1;
    for (QueryState& s : states) {
      const float* a = s.alpha.data() + static_cast<size_t>(best) * s.n;
      for (int t = 0; t < s.n; ++t) s.sum[t] += a[t];
    }
    out.fcs.push_back(best);
    out.ca.push_back(
        states.empty() ? 0.0f : static_cast<float>(best_sum / static_cast<double>(states.size())));
  }
  return out;
}

}  // namespace fasa
