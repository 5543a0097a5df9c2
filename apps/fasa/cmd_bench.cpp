// `fasa bench -m MODEL [-p N] [-n N] [-d D1,D2,...] [-r R] [--threads T] [--json]`
// llama-bench's conventions: ppN = prompt processing of N tokens, tgN = generation of N tokens
// one at a time, each measured after a context of depth D ("@ dD"), repeated R times
// (mean and standard deviation of tokens/s).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/engine/session.h"
#include "fasa/io/gguf.h"

namespace fasa::cli {

namespace {

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
};

struct Measure {
  std::string test;
  int depth = 0;
  int n_tokens = 0;
  std::vector<double> tps;  // tokens/s per repetition
  double kv_read_per_token = 0.0;   // tg: KV bytes read per decoded token (last repetition)
  double dense_read_per_token = 0.0;
  uint64_t kv_resident = 0;         // cache rows written + policy side data, after the test
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
  if (a.n_prompt == 0 && a.n_gen == 0) fail("nothing to measure: -p and -n are both 0");
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
  Session session(model, so);
  const auto ctx_tokens = bench_tokens(std::max(max_depth, 1), c.n_vocab, 1);
  const auto pp_tokens = bench_tokens(std::max(a.n_prompt, 1), c.n_vocab, 2);
  const auto tg_tokens = bench_tokens(std::max(a.n_gen, 1), c.n_vocab, 3);
  auto fill_depth = [&](int d) {
    session.reset();
    if (d > 0) session.prefill(std::vector<int32_t>(ctx_tokens.begin(), ctx_tokens.begin() + d));
  };

  std::vector<Measure> results;
  for (int d : a.depths) {
    if (a.n_prompt > 0) {
      Measure m{fmt::format("pp{}", a.n_prompt), d, a.n_prompt, {}};
      for (int r = 0; r < a.reps; ++r) {
        fill_depth(d);
        m.tps.push_back(a.n_prompt / seconds_of([&] { session.prefill(pp_tokens); }));
      }
      results.push_back(m);
    }
    if (a.n_gen > 0) {
      Measure m{fmt::format("tg{}", a.n_gen), d, a.n_gen, {}};
      for (int r = 0; r < a.reps; ++r) {
        fill_depth(d);
        m.tps.push_back(a.n_gen / seconds_of([&] {
                          for (int i = 0; i < a.n_gen; ++i) session.decode(tg_tokens[i]);
                        }));
        const AttnStats& st = session.attn_stats();
        m.kv_read_per_token = static_cast<double>(st.bytes_read()) / st.decode_tokens;
        m.dense_read_per_token = static_cast<double>(st.dense_bytes) / st.decode_tokens;
        m.kv_resident = session.cache().used_bytes() + session.policy().resident_bytes();
      }
      results.push_back(m);
    }
  }

  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = model->file().path();
    j["model_bytes"] = model->weight_bytes();
    j["threads"] = num_threads();
    j["kv_type"] = a.kv_type;
    j["policy"] = a.policy.spec();
    j["reps"] = a.reps;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& m : results) {
      rows.push_back({{"test", m.test},
                      {"depth", m.depth},
                      {"n_tokens", m.n_tokens},
                      {"tokens_per_s", m.mean()},
                      {"stddev", m.stddev()},
                      {"samples", m.tps},
                      {"kv_bytes_read_per_token", m.kv_read_per_token},
                      {"dense_kv_bytes_read_per_token", m.dense_read_per_token},
                      {"kv_resident_bytes", m.kv_resident}});
    }
    j["results"] = rows;
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("| model | size | threads | kv | policy | test | t/s | KV read/token |\n");
  std::printf("| --- | ---: | ---: | --- | --- | --- | ---: | ---: |\n");
  for (const auto& m : results) {
    const std::string test = m.depth > 0 ? fmt::format("{} @ d{}", m.test, m.depth) : m.test;
    const std::string kv_read =
        m.kv_read_per_token > 0 ? human_bytes(static_cast<uint64_t>(m.kv_read_per_token)) : "";
    std::printf("| %s | %s | %d | %s | %s | %s | %.2f ± %.2f | %s |\n",
                c.name.empty() ? c.arch.c_str() : c.name.c_str(),
                human_bytes(model->weight_bytes()).c_str(), num_threads(), a.kv_type.c_str(),
                a.policy.spec().c_str(), test.c_str(), m.mean(), m.stddev(), kv_read.c_str());
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
  add_policy_options(cmd, a->policy);
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace fasa::cli
