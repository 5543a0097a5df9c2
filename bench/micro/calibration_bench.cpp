// Online calibration's cost (Google Benchmark): the compound CA greedy of one kv-head group over
// a window of decode-like queries sharing one key array, at the shapes the policies meet.
// Run: ./build/fasa_microbench --benchmark_filter=CompoundGreedy
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "fasa/attention/compound_greedy.h"
#include "fasa/attention/frequency_chunks.h"

namespace fasa {
namespace {

// args: queries, keys n, head_dim, n_max
void BM_CompoundGreedy(benchmark::State& st) {
  const int n_q = static_cast<int>(st.range(0)), n = static_cast<int>(st.range(1));
  const int hd = static_cast<int>(st.range(2)), n_max = static_cast<int>(st.range(3));
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> keys(static_cast<size_t>(n) * hd), qs(static_cast<size_t>(n_q) * hd);
  for (int t = 0; t < n; ++t) {
    for (int c = 0; c < hd; ++c) keys[t * hd + c] = g(rng) * (1.0f + 0.1f * (c % (hd / 2)));
  }
  for (auto& x : qs) x = g(rng);
  std::vector<CaQuery> queries;
  for (int j = 0; j < n_q; ++j) queries.push_back({qs.data() + j * hd, keys.data(), n - j % 32});
  const auto fcs = fc_dims(RopeLayout::Neox, FcLayout::Rope, hd, hd);
  std::vector<float> single;
  for (auto _ : st) {
    benchmark::DoNotOptimize(greedy_compound_fcs(queries, hd, fcs, 256, n_max, &single));
  }
}
BENCHMARK(BM_CompoundGreedy)
    ->Args({96, 4096, 64, 8})
    ->Args({32, 4096, 64, 8})
    ->Args({96, 16384, 64, 8})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fasa
