// `fasa bench -m MODEL [-p N] [-n N] [-d D1,D2,...] [-r R] [--threads T] [--bandwidth] [--json]`
// llama-bench's conventions: ppN = prompt processing of N tokens, tgN = generation of N tokens
// one at a time, each measured after a context of depth D ("@ dD"), repeated R times
// (mean and standard deviation of tokens/s). `--compare SPEC` runs more policies side by side,
// alternating repetitions, and reports each one's speed as a ratio to the first.
// `--bandwidth` first measures the machine's read bandwidth and adds the roofline to every tg
// row: decoding reads all weights plus the KV it attends to per token, so bandwidth / those
// bytes bounds tokens/s, and the row reports the fraction of that bound it reached. With
// `-p 0 -n 0` it only prints the bandwidth.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "fasa/bench/bandwidth.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/engine/session.h"
#include "fasa/io/gguf.h"

namespace fasa::cli {

namespace {

constexpr int kBandwidthPasses = 5;  // the probe reports the best of this many passes

struct BenchArgs {
  std::string model;
  int n_prompt = 512;
  int n_gen = 128;
  std::vector<int> depths = {0};
  int reps = 3;
  int threads = 0;
  std::string kv_type = "f16";
  PolicyArgs policy;
  bool json = false;
  bool bandwidth = false;
  int64_t bandwidth_bytes = 1ll << 30;
};

struct Measure {
  std::string policy;
  std::string test;
  int depth = 0;
  int n_tokens = 0;
  std::vector<double> tps;  // tokens/s per repetition
  // tg, from the last repetition:
  double kv_read_per_token = 0.0;    // KV bytes read per decoded token (selection + attention)
  double dense_read_per_token = 0.0;  // what dense attention would have read
  double disk_read_per_token = 0.0;   // bytes the file tier's device delivered (FASA-M)
  double disk_ms_per_token = 0.0;     // time inside those reads
  uint64_t kv_ram = 0;   // KV resident in RAM after the test: cache + policy side data
  uint64_t kv_file = 0;  // KV resident in the file tier
  double mean() const {
    double s = 0.0;
    for (double x : tps) s += x;
    return tps.empty() ? 0.0 : s / tps.size();
  }
  double stddev() const {
    if (tps.size() < 2) return 0.0;
    const double m = mean();
    double s = 0.0;
    for (double x : tps) s += (x - m) * (x - m);
    return std::sqrt(s / (tps.size() - 1));
  }
};

std::vector<int32_t> bench_tokens(int n, int n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, n_vocab - 1);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = u(rng);
  return t;
}

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run_bench(const BenchArgs& a) {
  if (a.n_prompt < 0 || a.n_gen < 0) fail("-p and -n must be >= 0");
  const bool only_bandwidth = a.n_prompt == 0 && a.n_gen == 0;
  if (only_bandwidth && !a.bandwidth) {
    fail("nothing to measure: -p and -n are both 0 (and no --bandwidth)");
  }
  if (a.bandwidth_bytes < static_cast<int64_t>(kMinBandwidthBytes)) {
    fail("--bandwidth-bytes must be at least {} (64 MiB), so the probe reads memory and not "
         "cache (got {})",
         kMinBandwidthBytes, a.bandwidth_bytes);
  }
  if (a.reps < 1) fail("-r must be >= 1 (got {})", a.reps);
  for (int d : a.depths) {
    if (d < 0) fail("depth must be >= 0 (got {})", d);
  }
  apply_threads(a.threads);
  auto model = load_model(a.model);
  const ModelConfig& c = model->config();
  const int max_depth = *std::max_element(a.depths.begin(), a.depths.end());
  SessionOptions so;
  so.n_ctx = max_depth + std::max(a.n_prompt, a.n_gen);
  so.kv_type = parse_kv_type(a.kv_type);
  so.policy = a.policy.spec();
  if (so.n_ctx > c.n_ctx_train) {
    fail("depth {} + {} tokens exceeds the model's context length {}", max_depth,
         std::max(a.n_prompt, a.n_gen), c.n_ctx_train);
  }
  // The probe runs before any session exists, so its buffer and the KV caches never coexist.
  BandwidthResult bw;
  if (a.bandwidth) {
    std::fprintf(stderr, "fasa: measuring read bandwidth...\n");
    bw = measure_read_bandwidth(static_cast<uint64_t>(a.bandwidth_bytes), kBandwidthPasses);
  }
  if (only_bandwidth) {
    if (a.json) {
      nlohmann::ordered_json j = {
          {"read_bandwidth_gb_s", bw.read_gb_s}, {"threads", bw.threads}, {"bytes", bw.bytes}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("read bandwidth: %.2f GB/s (%d thread%s, %s buffer, best of %d passes)\n",
                  bw.read_gb_s, bw.threads, bw.threads == 1 ? "" : "s",
                  human_bytes(bw.bytes).c_str(), kBandwidthPasses);
    }
    return;
  }
  // One session per policy; repetitions alternate between them, so drift and noise on a
  // shared machine hit every policy alike and the ratios stay fair.
  const std::vector<std::string> specs = a.policy.specs();
  std::vector<std::unique_ptr<Session>> sessions;
  for (const std::string& spec : specs) {
    so.policy = spec;
    sessions.push_back(std::make_unique<Session>(model, so));
  }
  const auto ctx_tokens = bench_tokens(std::max(max_depth, 1), c.n_vocab, 1);
  const auto pp_tokens = bench_tokens(std::max(a.n_prompt, 1), c.n_vocab, 2);
  const auto tg_tokens = bench_tokens(std::max(a.n_gen, 1), c.n_vocab, 3);
  auto fill_depth = [&](Session& session, int d) {
    session.reset();
    if (d > 0) session.prefill(std::vector<int32_t>(ctx_tokens.begin(), ctx_tokens.begin() + d));
  };

  std::vector<Measure> results;
  for (int d : a.depths) {
    for (const bool gen : {false, true}) {
      const int n = gen ? a.n_gen : a.n_prompt;
      if (n == 0) continue;
      const size_t first = results.size();
      for (const std::string& spec : specs) {
        results.push_back(Measure{spec, fmt::format("{}{}", gen ? "tg" : "pp", n), d, n, {}});
      }
      for (int r = 0; r < a.reps; ++r) {
        for (size_t p = 0; p < specs.size(); ++p) {
          Session& session = *sessions[p];
          Measure& m = results[first + p];
          fill_depth(session, d);
          if (!gen) {
            m.tps.push_back(n / seconds_of([&] { session.prefill(pp_tokens); }));
            continue;
          }
          m.tps.push_back(n / seconds_of([&] {
                            for (int i = 0; i < n; ++i) session.decode(tg_tokens[i]);
                          }));
          const AttnStats& st = session.attn_stats();
          const double toks = static_cast<double>(st.decode_tokens);
          m.kv_read_per_token = st.bytes_read() / toks;
          m.dense_read_per_token = st.dense_bytes / toks;
          m.disk_read_per_token = st.tier_read_bytes / toks;
          m.disk_ms_per_token = st.tier_read_ns / 1e6 / toks;
          m.kv_ram = session.cache().ram_bytes() + session.policy().resident_bytes();
          m.kv_file = session.cache().file_bytes();
        }
      }
    }
  }

  // The bandwidth roofline of a tg row: every weight is read once per token, plus the KV bytes
  // that this policy's attention read.
  struct Roofline {
    double bytes_per_token = 0.0;
    double tokens_per_s = 0.0;  // bandwidth-bound tokens/s
    double fraction = 0.0;      // measured / bound
  };
  auto roofline = [&](const Measure& m) {
    Roofline r;
    r.bytes_per_token = static_cast<double>(model->weight_bytes()) + m.kv_read_per_token;
    r.tokens_per_s = bw.read_gb_s * 1e9 / r.bytes_per_token;
    r.fraction = r.tokens_per_s > 0.0 ? m.mean() / r.tokens_per_s : 0.0;
    return r;
  };

  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = model->file().path();
    j["model_bytes"] = model->weight_bytes();
    j["threads"] = num_threads();
    j["kv_type"] = a.kv_type;
    j["policies"] = specs;
    j["reps"] = a.reps;
    if (a.bandwidth) j["read_bandwidth_gb_s"] = bw.read_gb_s;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& m : results) {
      nlohmann::ordered_json row = {{"policy", m.policy},
                                    {"test", m.test},
                                    {"depth", m.depth},
                                    {"n_tokens", m.n_tokens},
                                    {"tokens_per_s", m.mean()},
                                    {"stddev", m.stddev()},
                                    {"samples", m.tps}};
      if (m.test.rfind("tg", 0) == 0) {
        row["kv_bytes_read_per_token"] = m.kv_read_per_token;
        row["dense_kv_bytes_read_per_token"] = m.dense_read_per_token;
        row["kv_resident_ram_bytes"] = m.kv_ram;
        row["kv_resident_file_bytes"] = m.kv_file;
        row["disk_bytes_read_per_token"] = m.disk_read_per_token;
        row["disk_read_ms_per_token"] = m.disk_ms_per_token;
        if (a.bandwidth) {
          const Roofline r = roofline(m);
          row["bytes_per_token"] = r.bytes_per_token;
          row["roofline_tokens_per_s"] = r.tokens_per_s;
          row["roofline_fraction"] = r.fraction;
        }
      }
      rows.push_back(row);
    }
    j["results"] = rows;
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("model %s (%s), %d threads, KV %s",
              c.name.empty() ? c.arch.c_str() : c.name.c_str(),
              human_bytes(model->weight_bytes()).c_str(), num_threads(), a.kv_type.c_str());
  if (a.bandwidth) {
    std::printf(", read bandwidth %.2f GB/s (%s buffer)", bw.read_gb_s,
                human_bytes(bw.bytes).c_str());
  }
  std::printf("\n\n");
  std::printf("| policy | test | t/s | vs first | KV read/token | KV in RAM | KV on disk | disk "
              "read/token |%s\n",
              a.bandwidth ? " bound t/s | roofline |" : "");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |%s\n",
              a.bandwidth ? " ---: | ---: |" : "");
  for (size_t i = 0; i < results.size(); ++i) {
    const Measure& m = results[i];
    const Measure& base = results[i - i % specs.size()];  // the first policy's row of this test
    const std::string test = m.depth > 0 ? fmt::format("{} @ d{}", m.test, m.depth) : m.test;
    const bool tg = m.test.rfind("tg", 0) == 0;
    auto bytes = [&](double b) { return tg ? human_bytes(static_cast<uint64_t>(b)) : std::string(); };
    const std::string disk =
        tg && m.kv_file > 0
            ? fmt::format("{} in {:.2f} ms", bytes(m.disk_read_per_token), m.disk_ms_per_token)
            : std::string();
    std::string roof;
    if (a.bandwidth) {
      const Roofline r = roofline(m);
      roof = tg ? fmt::format(" {:.2f} | {:.1f}% |", r.tokens_per_s, 100.0 * r.fraction)
                : std::string("  |  |");
    }
    std::printf("| %s | %s | %.2f ± %.2f | %.2f | %s | %s | %s | %s |%s\n", m.policy.c_str(),
                test.c_str(), m.mean(), m.stddev(), m.mean() / std::max(base.mean(), 1e-12),
                bytes(m.kv_read_per_token).c_str(), bytes(static_cast<double>(m.kv_ram)).c_str(),
                tg && m.kv_file > 0 ? bytes(static_cast<double>(m.kv_file)).c_str() : "",
                disk.c_str(), roof.c_str());
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "prompt-processing and generation speed");
  cmd->add_option("-m,--model", a->model, "GGUF path or pulled model name")->required();
  cmd->add_option("-p,--n-prompt", a->n_prompt, "prompt tokens (0 = skip)")->capture_default_str();
  cmd->add_option("-n,--n-gen", a->n_gen, "generated tokens (0 = skip)")->capture_default_str();
  cmd->add_option("-d,--depth", a->depths, "context depths, comma separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-r,--reps", a->reps, "repetitions")->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--kv-type", a->kv_type, "KV cache type: f16 or f32")->capture_default_str();
  add_policy_options(cmd, a->policy, /*with_compare=*/true);
  cmd->add_flag("--bandwidth", a->bandwidth,
                "measure read bandwidth first; add the bandwidth roofline to tg rows (with -p 0 "
                "-n 0: only measure it)");
  cmd->add_option("--bandwidth-bytes", a->bandwidth_bytes,
                  "buffer size of the --bandwidth probe, >= 64 MiB")
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace fasa::cli
