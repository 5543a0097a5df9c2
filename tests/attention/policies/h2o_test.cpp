// H2O: against brute-force references (tests/attention/policies/eviction_fixture.h).
#include "attention/policies/eviction_fixture.h"

namespace fasa {
namespace {

// H2O against a brute-force simulation in doubles: scores = the prompt queries' causal softmax
// plus every decode step's probabilities over the slots it attended; each step keeps the newest
// round(recent * B) slots and the best-scoring others. Evicted slots never come back.
TEST(H2oPolicy, KeepsTheHeavyHittersOfTheAccumulatedAttention) {
  const int P = 12, S = 30, B = 10;
  Data d(P + S, 8);
  int checked = 0;
  for (const char* gqa : {"shared", "per-head"}) {
    const bool per_head = std::string(gqa) == "per-head";
    const int n_lists = per_head ? kGroup : 1;
    auto p = policy_from("h2o:budget=10,recent=0.3,gqa=" + std::string(gqa));
    d.prefill(*p, P, 12);
    for (int l = 0; l < kShape.n_layers; ++l) {
      // Reference scores [n_heads][slots] and kept lists, per kv head.
      std::vector<std::vector<double>> score(kShape.n_heads, std::vector<double>(P + S, 0.0));
      for (int h = 0; h < kShape.n_heads; ++h) {
        for (int t = 0; t < P; ++t) {
          std::vector<int32_t> keys(t + 1);
          std::iota(keys.begin(), keys.end(), 0);
          const auto pr = d.probs(l, h, t, keys);
          for (int j = 0; j <= t; ++j) score[h][j] += pr[j];
        }
      }
      std::vector<std::vector<int32_t>> alive(kShape.n_kv_heads * n_lists);
      for (auto& a : alive) {
        a.resize(P);
        std::iota(a.begin(), a.end(), 0);
      }
      std::set<std::pair<int, int32_t>> gone;  // (list, slot)
      for (int n = P + 1; n <= P + S; ++n) {
        for (int g = 0; g < kShape.n_kv_heads; ++g) {
          Selection sel;
          p->select(d.step(l, g, n), sel);
          ASSERT_FALSE(sel.all);
          for (int j = 0; j < n_lists; ++j) {
            std::vector<int32_t>& a = alive[g * n_lists + j];
            a.push_back(n - 1);
            const int n_recent = 3, n_old = static_cast<int>(a.size()) - n_recent;
            std::vector<double> mass(n_old, 0.0);
            for (int i = 0; i < kGroup; ++i) {
              if (per_head && i != j) continue;
              for (int c = 0; c < n_old; ++c) mass[c] += score[g * kGroup + i][a[c]];
            }
            double margin = 0.0;
            std::vector<int32_t> want;
            for (int c : top_of(mass, B - n_recent, &margin)) want.push_back(a[c]);
            want.insert(want.end(), a.end() - n_recent, a.end());
            const std::vector<int32_t>& got = sel.slots_for(j);
            for (int32_t s : got) EXPECT_FALSE(gone.count({g * n_lists + j, s})) << "slot " << s;
            if (margin > 1e-5) {
              EXPECT_EQ(got, want) << gqa << " layer " << l << " step " << n;
              ++checked;
            }
            for (int32_t s : a) {
              if (!std::binary_search(got.begin(), got.end(), s)) gone.insert({g * n_lists + j, s});
            }
            a = got;  // follow the policy past a near-tie
          }
          // The driver's probabilities over the attended slots, fed back per query head.
          for (int i = 0; i < kGroup; ++i) {
            const int h = g * kGroup + i;
            const auto& list = sel.slots_for(i);
            const auto pr = d.probs(l, h, n - 1, list);
            std::vector<float> pf(pr.begin(), pr.end());
            facet<ProbabilityObserver>(*p)->on_probs(l, h, sel, pf.data(),
                                                     static_cast<int>(pf.size()));
            for (size_t c = 0; c < list.size(); ++c) score[h][list[c]] += pf[c];
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 250);  // of 2 layers x 30 steps x (2 shared + 4 per-head lists) = 360
}

}  // namespace
}  // namespace fasa
