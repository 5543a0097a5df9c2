// Speed measurements in llama-bench's conventions (`fasa bench`, Python's fasa.bench): ppN =
// prompt processing of N tokens, tgN = generation of N tokens one at a time, each measured after
// a context of depth D ("@ dD"), repeated R times (mean and standard deviation of tokens/s). The
// depth is a real prefill of random tokens (or of a text's), or with depth_fill "synthetic"
// random keys and values stored straight into the cache (Session::fill_synthetic: the same
// store/on_append/commit path, no matmuls): a pp or tg step at depth D costs the same whatever
// the cache holds, so this measures speed only, and makes deep contexts on big models
// affordable. A tg test with batch B > 1 ("tgNxB") decodes B sequences of the policy together,
// one forward pass per step (the server's batching), and its tokens/s counts all of them.
// The policies run side by side, alternating repetitions, so drift and noise on a shared machine
// hit every policy alike; each speed is also given as a ratio to the first policy's
// (eval/bench_report.h prints them).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fasa/core/parallel.h"
#include "fasa/engine/lossless.h"
#include "fasa/kernels/bandwidth.h"
#include "fasa/model/model.h"

namespace fasa {

inline constexpr int kBenchBandwidthPasses = 5;  // the probe reports the best of this many passes

struct BenchTest {
  bool gen = false;  // tg (one token per step) or pp (one batch)
  int n = 0;
  int batch = 1;             // tg: sequences decoding together, one forward pass per step
  std::string name() const;  // "pp512", "tg128", "tg128x4"
};

// The tests of one depth in llama-bench's order: every prompt count, then every generation count
// at every batch size; 0 skips.
std::vector<BenchTest> bench_tests(const std::vector<int>& prompts, const std::vector<int>& gens,
                                   const std::vector<int>& batches);

struct BenchSettings {
  std::vector<BenchTest> tests;  // run at every depth, in order
  std::vector<int> depths{0};
  std::string depth_fill = "prefill";  // or "synthetic"
  int reps = 3;
  std::string kv_type = "f16";
  // Complete policy specs (calibrations resolved), measured side by side; the first is the base
  // of the ratios.
  std::vector<std::string> policies{"full"};
  bool warmup = true;  // one untimed prefill + decode per policy first (llama-bench does too)
  std::string lossless = "off";  // engine/lossless.h: tg tests generate greedily, drafts verified
  // The depth's context from a text's tokens (repeated when short) instead of random ones: the
  // file text_path (read when the sessions are made), else `text` itself when not empty.
  std::string text_path, text;
  bool bandwidth = false;  // measure read bandwidth first (the roofline of tg rows)
  int64_t bandwidth_bytes = 1ll << 30;
  // Tokens per prefill forward pass (pp tests, the prefill depth fill): llama-bench's -b
  // (n_batch). 0: the engine's default (SessionOptions::prefill_chunk).
  int prefill_chunk = 0;
};

// Throws fasa::Error for settings that cannot run, before any model loads: no test and no
// bandwidth probe, a batch below 1, a probe buffer below kMinBandwidthBytes, reps < 1, an unknown
// depth fill, a negative prefill chunk, or --lossless with a batch or a depth it cannot run at.
void check_bench_settings(const BenchSettings& s);

// One test at one depth under one policy.
struct BenchMeasure {
  std::string policy;
  BenchTest test;
  int depth = 0;
  std::vector<double> tps;  // tokens/s per repetition
  // tg, from the last repetition:
  double kv_read_per_token = 0.0;        // KV bytes read per decoded token (selection + attention)
  double dense_read_per_token = 0.0;     // what dense attention would have read
  double disk_read_per_token = 0.0;      // bytes the file tier's device delivered (FASA-M)
  double disk_ms_per_token = 0.0;        // time inside those reads
  double prefetch_read_per_token = 0.0;  // of disk_read: background reads (FASA-M prefetch)
  double prefetch_hit_share = 0.0;       // prefetched rows a decode step then used
  double tier_rows_per_token = 0.0;      // rows decode asked of the file tier
  double tier_reads_per_token = 0.0;     // the device reads those took (rows close by share one)
  double tier_cache_hit_share = 0.0;     // of those: found in its RAM row cache
  double dense_fallback_share = 0.0;     // decode steps the policy attended densely (break-even)
  // calib=online (last repetition): the calibration's time at the test's first decode step, and
  // the time the depth's prefill took (tg's t/s leave the calibration out: it is reported here).
  double calib_s = -1.0;  // < 0: no online calibration was made
  double fill_s = 0.0;
  uint64_t kv_ram = 0;   // KV resident in RAM after the test: cache + policy side data
  uint64_t kv_file = 0;  // KV resident in the file tier
  uint64_t kv_global = 0, kv_window = 0;  // cache bytes of global / sliding-window layers
  ParallelStats par;  // the parallel regions of the last repetition's timed part
  // lossless (last repetition): the decoder's counts, the tokens generated, and whether they
  // equal the `full` policy's (`full` generates them plainly: lossless must give the same).
  LosslessStats lossless;
  std::vector<int32_t> generated;
  bool same_as_first = true;
  double mean() const;
  double stddev() const;  // sample standard deviation (0 with fewer than 2 repetitions)
};

// What run_bench tells as it goes (each may be null).
struct BenchEvents {
  std::function<void()> probing;  // the bandwidth probe starts
  // The sessions and tokens are ready (bw: the probe's result, zero without one); warm-up and
  // measurements follow.
  std::function<void(const BandwidthResult& bw)> ready;
  // One test at one depth measured: one row per policy, in order.
  std::function<void(const std::vector<BenchMeasure>& group)> rows;
};

struct BenchResult {
  BandwidthResult bandwidth;       // zero without settings.bandwidth
  std::vector<BenchMeasure> rows;  // every group's rows, in order
};

// Measures every test at every depth under every policy. Throws check_bench_settings' errors, and
// fasa::Error when the deepest test does not fit the model's context, a policy cannot run on a
// synthetic fill, or the text holds no tokens. With no tests only the bandwidth is measured.
BenchResult run_bench(const std::shared_ptr<const Model>& model, const BenchSettings& s,
                      const BenchEvents& events = {});

}  // namespace fasa
