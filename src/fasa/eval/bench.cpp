#include "fasa/eval/bench.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fasa/attention/policy.h"
#include "fasa/core/error.h"
#include "fasa/core/input_file.h"
#include "fasa/eval/bench_measure.h"
#include "fasa/kernels/kv_rows.h"

namespace fasa {

std::string BenchTest::name() const {
  return fmt::format("{}{}{}", gen ? "tg" : "pp", n, batch > 1 ? fmt::format("x{}", batch) : "");
}

std::vector<BenchTest> bench_tests(const std::vector<int>& prompts, const std::vector<int>& gens,
                                   const std::vector<int>& batches) {
  std::vector<BenchTest> tests;
  for (int n : prompts) {
    if (n > 0) tests.push_back({false, n, 1});
  }
  for (int n : gens) {
    for (int b : batches) {
      if (n > 0) tests.push_back({true, n, b});
    }
  }
  return tests;
}

double BenchMeasure::mean() const {
  double s = 0.0;
  for (double x : tps) s += x;
  return tps.empty() ? 0.0 : s / tps.size();
}

double BenchMeasure::stddev() const {
  if (tps.size() < 2) return 0.0;
  const double m = mean();
  double s = 0.0;
  for (double x : tps) s += (x - m) * (x - m);
  return std::sqrt(s / (tps.size() - 1));
}

namespace {

void check_lossless(const BenchSettings& s) {
  if (parse_lossless(s.lossless).k == 0) return;
  for (const BenchTest& t : s.tests) {
    if (t.gen && t.batch > 1) fail("--lossless measures one sequence: use -b 1");
  }
  for (int d : s.depths) {
    if (d < 1 || s.depth_fill != "prefill") {
      fail(
          "--lossless generates from a prefilled context: give -d >= 1 with --depth-fill "
          "prefill");
    }
  }
}

}  // namespace

void check_bench_settings(const BenchSettings& s) {
  for (const BenchTest& t : s.tests) {
    if (t.batch < 1) fail("--batch values must be >= 1 (got {})", t.batch);
  }
  if (s.tests.empty() && !s.bandwidth) {
    fail("nothing to measure: every -p and -n value is 0 (and no --bandwidth)");
  }
  if (s.bandwidth_bytes < static_cast<int64_t>(kMinBandwidthBytes)) {
    fail(
        "--bandwidth-bytes must be at least {} (64 MiB), so the probe reads memory and not "
        "cache (got {})",
        kMinBandwidthBytes, s.bandwidth_bytes);
  }
  if (s.reps < 1) fail("-r must be >= 1 (got {})", s.reps);
  if (s.depth_fill != "prefill" && s.depth_fill != "synthetic") {
    fail("--depth-fill '{}': expected prefill or synthetic", s.depth_fill);
  }
  if (s.depths.empty()) fail("-d: no depth given");
  if (s.prefill_chunk < 0) fail("the prefill chunk must be >= 1 (got {})", s.prefill_chunk);
  check_lossless(s);
}

namespace {

// The sessions (one per policy), refusing a policy that learns from prefill queries on a
// synthetic fill of some depth.
void make_sessions(BenchRig& rig, int max_depth) {
  for (const std::string& spec : rig.specs) {
    rig.so.policy = spec;
    rig.sessions.push_back(std::make_unique<Session>(rig.model, rig.so));
    if (rig.synthetic && max_depth > 0 && rig.sessions.back()->facets().needs_prefill_queries()) {
      fail(
          "--depth-fill synthetic: policy '{}' learns from the prefill queries, which a "
          "synthetic fill does not make; use --depth-fill prefill",
          spec);
    }
  }
}

// The depth's context (random or the text's), the pp prompt and the tg inputs.
BenchTokens make_tokens(const BenchSettings& s, const Model& model, int max_depth, int longest) {
  const int n_vocab = model.config().n_vocab;
  BenchTokens tok;
  const int n_ctx = std::max(max_depth, 1);
  if (!s.text_path.empty()) {
    tok.ctx = bench_text_tokens(model, read_input_file(s.text_path, "text file"), n_ctx);
  } else if (!s.text.empty()) {
    tok.ctx = bench_text_tokens(model, s.text, n_ctx);
  } else {
    tok.ctx = bench_tokens(n_ctx, n_vocab, 1);
  }
  tok.pp = bench_tokens(std::max(longest, 1), n_vocab, 2);
  tok.tg = bench_tokens(std::max(longest, 1), n_vocab, 3);
  return tok;
}

}  // namespace

BenchResult run_bench(const std::shared_ptr<const Model>& model, const BenchSettings& s,
                      const BenchEvents& events) {
  check_bench_settings(s);
  const ModelConfig& c = model->config();
  int longest = 0;
  for (const BenchTest& t : s.tests) longest = std::max(longest, t.n);
  const int max_depth = *std::max_element(s.depths.begin(), s.depths.end());
  if (static_cast<int64_t>(max_depth) + longest > c.n_ctx_max()) {  // 64-bit: no overflow
    fail("depth {} + {} tokens exceeds the model's context length {}", max_depth, longest,
         c.n_ctx_max());
  }
  BenchRig rig;
  rig.model = model;
  rig.specs = s.policies;
  rig.synthetic = s.depth_fill == "synthetic";
  rig.so.n_ctx = max_depth + longest;
  rig.so.kv_type = parse_kv_type(s.kv_type);
  if (s.prefill_chunk > 0) rig.so.prefill_chunk = s.prefill_chunk;
  // The probe runs before any session exists, so its buffer and the KV caches never coexist.
  BenchResult result;
  if (s.bandwidth) {
    if (events.probing) events.probing();
    result.bandwidth =
        measure_read_bandwidth(static_cast<uint64_t>(s.bandwidth_bytes), kBenchBandwidthPasses);
  }
  if (s.tests.empty()) return result;
  make_sessions(rig, max_depth);
  rig.lossless = parse_lossless(s.lossless);
  rig.tok = make_tokens(s, *model, max_depth, longest);
  if (events.ready) events.ready(result.bandwidth);
  if (s.warmup) bench_warm_up(rig);
  for (int d : s.depths) {
    for (const BenchTest& t : s.tests) {
      std::vector<BenchMeasure> group = measure_bench_test(rig, t, d, s.reps);
      if (events.rows) events.rows(group);
      result.rows.insert(result.rows.end(), group.begin(), group.end());
    }
  }
  return result;
}

}  // namespace fasa
