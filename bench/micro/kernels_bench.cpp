// Kernel micro-benchmarks (Google Benchmark): quantized matvec per weight type, dense decode
// attention against FASA's TIP + top-k + FAC at several depths and budgets, top-k alone, the
// softmax passes of the selector, and the feed-forward block's gated activations.
// Build: the `fasa_microbench` target (when libbenchmark-dev is installed); run single-threaded
// numbers with `OMP_NUM_THREADS=1 ./build/fasa_microbench`.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "fasa/core/amx.h"
#include "fasa/core/dtype.h"
#include "fasa/core/f16.h"
#include "fasa/kernels/attend.h"
#include "fasa/kernels/matmul.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/repack.h"
#include "fasa/kernels/tip.h"
#include "fasa/kernels/topk.h"

namespace fasa {
namespace {

std::vector<uint8_t> random_weights(DType t, int64_t n_out, int64_t n_in, std::mt19937& rng) {
  const DTypeInfo& info = dtype_info(t);
  std::vector<uint8_t> w(n_out * n_in / info.block_elems * info.block_bytes);
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  // Small finite fp16 scales (and mins) at each block's fp16 fields.
  int d_off = 0, min_off = -1;
  switch (t) {
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q4_K:
    case DType::Q5_K: min_off = 2; break;
    case DType::Q2_K:
      d_off = 80;
      min_off = 82;
      break;
    case DType::Q3_K: d_off = 108; break;
    case DType::Q6_K: d_off = 208; break;
    default: break;
  }
  if (info.block_elems > 1) {
    const uint16_t d = fp32_to_fp16(0.01f), m = fp32_to_fp16(0.02f);
    for (size_t b = 0; b < w.size(); b += info.block_bytes) {
      std::memcpy(w.data() + b + d_off, &d, 2);
      if (min_off >= 0) std::memcpy(w.data() + b + min_off, &m, 2);
    }
  }
  return w;
}

// args: type, n_out, n_in, n_tok
void BM_Matmul(benchmark::State& st) {
  const auto t = static_cast<DType>(st.range(0));
  const int64_t n_out = st.range(1), n_in = st.range(2), n_tok = st.range(3);
  std::mt19937 rng(1);
  const auto w = random_weights(t, n_out, n_in, rng);
  std::vector<float> x(n_tok * n_in, 0.5f), y(n_tok * n_out);
  for (auto& v : x) v = static_cast<float>(rng() % 200) / 100.0f - 1.0f;
  for (auto _ : st) {
    matmul(t, w.data(), n_out, n_in, x.data(), n_tok, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  st.SetLabel(std::string(dtype_name(t)));
  st.SetBytesProcessed(st.iterations() * static_cast<int64_t>(w.size()));
}
BENCHMARK(BM_Matmul)
    ->Args({static_cast<int>(DType::Q4_1), 1536, 576, 1})
    ->Args({static_cast<int>(DType::Q4_1), 576, 1536, 1})
    ->Args({static_cast<int>(DType::Q4_0), 1536, 576, 1})
    ->Args({static_cast<int>(DType::Q5_1), 1536, 576, 1})
    ->Args({static_cast<int>(DType::Q8_0), 49152, 576, 1})
    ->Args({static_cast<int>(DType::Q6_K), 1536, 512, 1})
    ->Args({static_cast<int>(DType::F16), 1536, 576, 1})
    ->Args({static_cast<int>(DType::Q4_1), 1536, 576, 64})
    // Gemma 3 270M's Q5_0 FFN up projection (2048 x 640) in a prefill chunk of 256 tokens.
    ->Args({static_cast<int>(DType::Q5_0), 2048, 640, 256});
// K-quants (256-element blocks, so n_in is a multiple of 256): Gemma 3 270M's FFN down
// projection (640 x 2048) and an up-projection-like 2048 x 768, at one and 64 tokens.
BENCHMARK(BM_Matmul)->ArgsProduct({{static_cast<int>(DType::Q2_K), static_cast<int>(DType::Q3_K),
                                    static_cast<int>(DType::Q4_K), static_cast<int>(DType::Q5_K),
                                    static_cast<int>(DType::Q6_K)},
                                   {640},
                                   {2048},
                                   {1, 64}});
BENCHMARK(BM_Matmul)->ArgsProduct(
    {{static_cast<int>(DType::Q4_K), static_cast<int>(DType::Q6_K)}, {2048}, {768}, {1, 64}});
// Llama-3.1-8B's shapes (larger than the caches: decode reads them from memory): the attention
// output (4096 x 4096), the FFN up (14336 x 4096) and down (4096 x 14336) projections.
BENCHMARK(BM_Matmul)->ArgsProduct(
    {{static_cast<int>(DType::Q4_K), static_cast<int>(DType::Q6_K)}, {4096}, {4096, 14336}, {1}});
BENCHMARK(BM_Matmul)->Args({static_cast<int>(DType::Q4_K), 14336, 4096, 1});

// The same K-quant shapes repacked 16 rows at a time (kernels/repack.h), as the model loader does
// on AVX-512: bytes per second count the GGUF rows' bytes, comparable with BM_Matmul's.
// args: GGUF type (Q4_K / Q6_K), n_out, n_in, n_tok.
void BM_MatmulRepacked(benchmark::State& st) {
  const auto t = static_cast<DType>(st.range(0));
  const int64_t n_out = st.range(1), n_in = st.range(2), n_tok = st.range(3);
  std::mt19937 rng(1);
  const auto w = random_weights(t, n_out, n_in, rng);
  const DType rt = repacked_type(t);
  std::vector<uint8_t> r(static_cast<size_t>(n_out * n_in / 256 * dtype_info(rt).block_bytes));
  repack_rows16(t, w.data(), n_out, n_in, r.data());
  std::vector<float> x(n_tok * n_in), y(n_tok * n_out);
  for (auto& v : x) v = static_cast<float>(rng() % 200) / 100.0f - 1.0f;
  for (auto _ : st) {
    matmul(rt, r.data(), n_out, n_in, x.data(), n_tok, y.data(), MatmulTiles::kPerToken);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetLabel(std::string(dtype_name(rt)));
  st.SetBytesProcessed(st.iterations() * static_cast<int64_t>(w.size()));
}
BENCHMARK(BM_MatmulRepacked)
    ->ArgsProduct({{static_cast<int>(DType::Q4_K), static_cast<int>(DType::Q6_K)},
                   {2048},
                   {768},
                   {1, 4, 64}});
BENCHMARK(BM_MatmulRepacked)
    ->ArgsProduct({{static_cast<int>(DType::Q4_K), static_cast<int>(DType::Q6_K)},
                   {4096},
                   {4096, 14336},
                   {1}});
BENCHMARK(BM_MatmulRepacked)->Args({static_cast<int>(DType::Q4_K), 14336, 4096, 1});
// Prefill without AMX (the VNNI path): Qwen2.5-1.5B's Q/O, gate/up and down shapes, 512 tokens.
BENCHMARK(BM_MatmulRepacked)
    ->ArgsProduct({{static_cast<int>(DType::Q4_K), static_cast<int>(DType::Q6_K)},
                   {1536},
                   {1536, 8960},
                   {512}});
BENCHMARK(BM_MatmulRepacked)->Args({static_cast<int>(DType::Q4_K), 8960, 1536, 512});

// Prefill matmuls with and without AMX (kernels/matmul_amx.h; AMX off = the VNNI path), on
// Qwen2.5-1.5B's shapes (Q/O 1536 x 1536, gate/up 8960 x 1536, down 1536 x 8960) at 512 tokens.
// args: type, n_out, n_in, n_tok, amx (0/1). The label says "AMX" when AMX actually ran.
void BM_MatmulAmx(benchmark::State& st) {
  set_amx_enabled(st.range(4) != 0);
  const bool amx = amx_active();
  BM_Matmul(st);
  st.SetLabel(std::string(dtype_name(static_cast<DType>(st.range(0)))) + (amx ? " AMX" : " VNNI"));
  set_amx_enabled(true);
}
BENCHMARK(BM_MatmulAmx)
    ->ArgsProduct({{static_cast<int>(DType::Q4_K), static_cast<int>(DType::Q6_K),
                    static_cast<int>(DType::Q8_0)},
                   {1536},
                   {1536},
                   {512},
                   {0, 1}})
    ->Args({static_cast<int>(DType::Q4_K), 8960, 1536, 512, 0})
    ->Args({static_cast<int>(DType::Q4_K), 8960, 1536, 512, 1})
    ->Args({static_cast<int>(DType::Q4_K), 1536, 8960, 512, 0})
    ->Args({static_cast<int>(DType::Q4_K), 1536, 8960, 512, 1})
    ->Args({static_cast<int>(DType::Q6_K), 1536, 8960, 512, 0})
    ->Args({static_cast<int>(DType::Q6_K), 1536, 8960, 512, 1})
    ->Args({static_cast<int>(DType::Q4_K), 1536, 1536, 16, 0})
    ->Args({static_cast<int>(DType::Q4_K), 1536, 1536, 16, 1})
    ->Unit(benchmark::kMillisecond);

struct KvFixture {
  int n, hd = 64;
  std::vector<uint16_t> k, v;  // [n, hd] f16
  std::vector<float> q;        // [hd]
  explicit KvFixture(int n_) : n(n_), k(n_ * 64), v(n_ * 64), q(64) {
    std::mt19937 rng(2);
    std::normal_distribution<float> nd;
    for (auto& e : k) e = fp32_to_fp16(nd(rng));
    for (auto& e : v) e = fp32_to_fp16(nd(rng));
    for (auto& e : q) e = nd(rng);
  }
  KvRows rows() const { return KvRows{k.data(), v.data(), KvType::F16, hd}; }
};

// One query head over every slot at depth n (args: n).
void BM_AttendDense(benchmark::State& st) {
  KvFixture f(static_cast<int>(st.range(0)));
  std::vector<float> out(f.hd);
  for (auto _ : st) {
    attend_one(f.q.data(), f.rows(), nullptr, f.n, 0.125f, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_AttendDense)->Arg(1024)->Arg(4096)->Arg(8192);

// FASA for one query head: TIP over a packed 16-dim column-major slice, top-B, FAC over the B
// slots (args: n, B).
void BM_TipTopkFac(benchmark::State& st) {
  KvFixture f(static_cast<int>(st.range(0)));
  const int budget = static_cast<int>(st.range(1));
  std::vector<uint16_t> packed(16 * f.n);  // [16, n]
  for (int c = 0; c < 16; ++c) {
    for (int t = 0; t < f.n; ++t) packed[c * f.n + t] = f.k[t * f.hd + c * 4];
  }
  std::vector<TipTerm> terms;
  for (int c = 0; c < 16; ++c) terms.push_back(TipTerm{c, f.q[c * 4]});
  std::vector<float> scores(f.n), out(f.hd);
  std::vector<int32_t> slots;
  for (auto _ : st) {
    tip_scores(packed.data(), true, f.n, terms.data(), 16, f.n, scores.data());
    top_k_indices(scores.data(), f.n, budget, slots);
    attend_one(f.q.data(), f.rows(), slots.data(), budget, 0.125f, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_TipTopkFac)->Args({1024, 64})->Args({4096, 256})->Args({8192, 256})->Args({8192, 819});

// TIP alone over a 32-dim slice, 16 terms (args: n, slice: 0 f16, 1 q8 blocks, 2 q4 blocks).
void BM_Tip(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), kind = static_cast<int>(st.range(1));
  const int cols = 32, nb = (n + kTipBlock - 1) / kTipBlock;
  std::mt19937 rng(4);
  std::vector<uint16_t> f16(static_cast<size_t>(cols) * n);
  for (auto& x : f16) x = fp32_to_fp16(static_cast<float>(rng() % 200) * 0.01f - 1.0f);
  std::vector<int8_t> q8(static_cast<size_t>(cols) * nb * kTipBlock);
  std::vector<uint8_t> q4(static_cast<size_t>(cols) * nb * kTipBlock / 2);
  std::vector<uint16_t> scale(static_cast<size_t>(cols) * nb, fp32_to_fp16(0.01f));
  for (auto& x : q8) x = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  for (auto& x : q4) x = static_cast<uint8_t>(rng());
  std::vector<TipTerm> terms;
  for (int c = 0; c < 16; ++c) terms.push_back(TipTerm{2 * c, 0.1f * static_cast<float>(c)});
  std::vector<float> scores(n);
  for (auto _ : st) {
    if (kind == 0) tip_scores(f16.data(), true, n, terms.data(), 16, n, scores.data());
    if (kind == 1)
      tip_scores_q8b(q8.data(), scale.data(), nb, terms.data(), 16, 0, n, scores.data());
    if (kind == 2)
      tip_scores_q4b(q4.data(), scale.data(), nb, terms.data(), 16, 0, n, scores.data());
    benchmark::DoNotOptimize(scores.data());
  }
  st.SetItemsProcessed(st.iterations() * n);
}
BENCHMARK(BM_Tip)->ArgsProduct({{4096, 32768}, {0, 1, 2}});

// One head's softmax passes over n TIP scores (arg 0: n; arg 1: 0 softmax_scaled, the selection's
// probabilities; 1 exp_sum_scaled, softmax_exp summed in double; 2 exp_sum_fast, the
// mean-value correction's sum).
void BM_ExpSum(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), kind = static_cast<int>(st.range(1));
  std::mt19937 rng(6);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  std::vector<float> x(n), y(n);
  for (auto& e : x) e = nd(rng);
  const float a = 0.2f, m = max_value(x.data(), n) * a;
  for (auto _ : st) {
    if (kind == 0) softmax_scaled(x.data(), a, m, n, y.data());
    if (kind == 1) benchmark::DoNotOptimize(exp_sum_scaled(x.data(), a, m, n));
    if (kind == 2) benchmark::DoNotOptimize(exp_sum_fast(x.data(), a, m, n));
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * n);
}
BENCHMARK(BM_ExpSum)->ArgsProduct({{8160, 32768}, {0, 1, 2}});

void BM_TopK(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), k = static_cast<int>(st.range(1));
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> s(n);
  for (auto& e : s) e = nd(rng);
  std::vector<int32_t> out;
  for (auto _ : st) {
    top_k_indices(s.data(), n, k, out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_TopK)->Args({4096, 256})->Args({8192, 256});

// The gated feed-forward activations over one prefill chunk: [n_tok, d_ff] (Gemma 3 270M: a
// 256-token chunk, d_ff 2048).
void BM_GatedAct(benchmark::State& st) {
  const int64_t n = st.range(1) * 2048;
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> g(n), u(n), h(n);  // [n_tok, d_ff]
  for (auto& e : g) e = nd(rng);
  for (auto& e : u) e = nd(rng);
  for (auto _ : st) {
    if (st.range(0) == 0) {
      silu_mul(g.data(), u.data(), n, h.data());
    } else {
      gelu_tanh_mul(g.data(), u.data(), n, h.data());
    }
    benchmark::DoNotOptimize(h.data());
  }
}
BENCHMARK(BM_GatedAct)->Args({0, 256})->Args({1, 256});  // 0: SiLU, 1: tanh-GELU

}  // namespace
}  // namespace fasa

BENCHMARK_MAIN();
