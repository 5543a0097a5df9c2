// `fasa bench -m MODEL [-p N1,N2] [-n N1,N2] [--sequences S1,S2] [-d D1,D2] [-r R] [-t T1,T2]
//            [-b N] [--policy P1,P2 [policy flags] [--budget B1,B2]] [--compare SPEC]...
//            [--bandwidth] [--depth-fill prefill|synthetic] [--json]`
// The measurements are eval/bench.h's (llama-bench's conventions: ppN, tgN, "@ dD", R
// repetitions), the report eval/bench_report.h's. -p, -n and -d are comma lists: every depth runs
// every -p value, then every -n value, as its own test (0 = skip); --sequences S > 1 makes a tg
// test ("tgNxS") decode S sequences together. -t is a list too: every test runs at every thread
// count, one set of rows each. -b/--batch-size is llama-bench's batch size: the tokens of one
// prefill forward pass (pp tests and the prefill depth fill), fasa's prefill chunk. The policies measured are --policy × --budget, then
// every --compare spec (bench_lists.h), side by side, each speed also given as a ratio to the
// first policy's.
// `--bandwidth` first measures the machine's read bandwidth and adds the roofline to every tg
// row: decoding reads all weights plus the KV it attends to per token, so bandwidth / those
// bytes bounds tokens/s, and the row reports the fraction of that bound it reached. With
// `-p 0 -n 0` it only prints the bandwidth.
// Output: a markdown table, or (-o) one self-contained JSON object per row: JSON Lines (--json),
// a JSON array or CSV. JSON Lines and the markdown rows are printed as each test finishes, so an
// interrupted run keeps what it measured.
#include <cstdio>
#include <memory>

#include "bench_lists.h"
#include "cli_common.h"
#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/eval/bench.h"
#include "fasa/eval/bench_report.h"
#include "fasa/io/gguf.h"
#include "provenance.h"

namespace fasa::cli {

namespace {

struct BenchArgs {
  std::string model;
  // Comma lists, parsed by run_bench so that every bad element ends in one fasa error.
  std::string n_prompt = "512";
  std::string n_gen = "128";
  std::string sequences = "1";
  std::string depths = "0";
  std::string threads = "0";
  std::string batch_size;     // -b: one count, the prefill chunk
  PolicyArgs policy;          // .policy and .budget are comma lists here
  bool json = false;          // = -o jsonl
  std::string output = "md";  // eval/bench_report.h: md, jsonl, json, csv
  // -r, --depth-fill, --kv-type, --no-warmup, --lossless, --text (as text_path), --bandwidth,
  // --bandwidth-bytes; the tests, depths and policies are set by run_bench from the lists.
  BenchSettings settings;
};

// -b N: one count (llama-bench's batch size; fasa's sequences decoding together are
// --sequences).
int batch_size(const std::string& text) {
  if (text.find(',') != std::string::npos) {
    fail(
        "-b/--batch-size '{}': one number, the tokens per prefill forward pass (llama-bench's "
        "-b); sequences decoding together are --sequences {}",
        text, text);
  }
  const int n = parse_counts("-b/--batch-size", text).front();
  if (n < 1 || n > 65536) fail("-b/--batch-size must be in 1..65536 (got {})", n);
  return n;
}

// -o and --json together.
RowFormat output_format(const BenchArgs& a) {
  const RowFormat format = parse_row_format(a.output);
  if (!a.json) return format;
  if (format != RowFormat::Markdown && format != RowFormat::JsonLines) {
    fail("--json is -o jsonl; it cannot be combined with -o {}", a.output);
  }
  return RowFormat::JsonLines;
}

// The tests and depths from the lists (every flag is checked before the model loads and the
// probe runs).
void plan_tests(const BenchArgs& a, BenchSettings& s) {
  const std::vector<int> prompts = parse_counts("-p", a.n_prompt);
  const std::vector<int> gens = parse_counts("-n", a.n_gen);
  s.depths = parse_counts("-d", a.depths);
  const std::vector<int> sequences = parse_counts("--sequences", a.sequences);
  for (int b : sequences) {
    if (b < 1) fail("--sequences values must be >= 1 (got {})", b);
  }
  s.tests = bench_tests(prompts, gens, sequences);
  if (!a.batch_size.empty()) s.prefill_chunk = batch_size(a.batch_size);
  check_bench_settings(s);
}

void run_bench_command(const BenchArgs& a) {
  const RowFormat format = output_format(a);
  BenchSettings s = a.settings;
  plan_tests(a, s);
  const std::vector<int> threads = parse_counts("--threads", a.threads);
  auto model = load_model(a.model);
  s.policies = resolved_specs(bench_policy_specs(a.policy), model);
  const std::string path = model->file().path();
  std::unique_ptr<BenchReport> report;
  BenchEvents ev;
  ev.probing = [] { std::fprintf(stderr, "fasa: measuring read bandwidth...\n"); };
  ev.ready = [&](const BandwidthResult& bw) {
    if (report) return report->next_run(bw);
    const BenchProvenance prov = [path](nlohmann::ordered_json& j, const std::string& policy) {
      add_provenance(j, path, policy);
    };
    report = std::make_unique<BenchReport>(format, *model, s, bw, prov);
    report->header();
  };
  ev.rows = [&](const std::vector<BenchMeasure>& group) { report->rows(group); };
  for (int t : threads) {  // one run per thread count, llama-bench's -t list
    apply_threads(t);
    const BenchResult r = run_bench(model, s, ev);
    if (s.tests.empty()) print_bandwidth_only(format, r.bandwidth);
  }
  if (report) report->finish();
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "prompt-processing and generation speed");
  cmd->add_option("-m,--model", a->model, "GGUF path or pulled model name")->required();
  cmd->add_option("-p,--n-prompt", a->n_prompt,
                  "prompt tokens, comma separated: one pp test each (0 = skip)")
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", a->n_gen,
                  "generated tokens, comma separated: one tg test each (0 = skip)")
      ->capture_default_str();
  cmd->add_option("--sequences", a->sequences,
                  "sequences decoding together in tg tests, comma separated: one forward pass "
                  "per step for all (the server's batching); t/s counts every sequence's tokens")
      ->capture_default_str();
  cmd->add_option("-b,--batch-size", a->batch_size,
                  "tokens per prefill forward pass in pp tests and the depth fill (llama-bench's "
                  "-b; default: the engine's prefill chunk, 256)");
  cmd->add_option("-d,--depth", a->depths, "context depths, comma separated")
      ->capture_default_str();
  cmd->add_option("-r,--reps", a->settings.reps, "repetitions")->capture_default_str();
  cmd->add_option("--depth-fill", a->settings.depth_fill,
                  "how the -d context is made: prefill (random tokens through the model) or "
                  "synthetic (random K/V rows stored directly: speed only, no prefill cost)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", a->threads,
                  "threads, comma separated: every test at each count (0 = all cores)")
      ->capture_default_str();
  cmd->add_option("--kv-type", a->settings.kv_type, "KV cache type: f16, f32 or q8_0")
      ->capture_default_str();
  add_policy_options(cmd, a->policy, /*with_compare=*/true);
  // Only bench takes lists; run and eval keep one --policy and one --budget.
  cmd->get_option("--policy")
      ->description(
          "attention policies, comma separated: full, oracle, fasa (or "
          "name:key=value,...); measured × every --budget, full once");
  cmd->get_option("--budget")
      ->description(
          "budgets, comma separated: tokens attended per decode step per kv-head "
          "group (< 1: fraction of context); one run per policy and budget");
  cmd->add_flag("--bandwidth", a->settings.bandwidth,
                "measure read bandwidth first; add the bandwidth roofline to tg rows (with -p 0 "
                "-n 0: only measure it)");
  cmd->add_option("--bandwidth-bytes", a->settings.bandwidth_bytes,
                  "buffer size of the --bandwidth probe, >= 64 MiB")
      ->capture_default_str();
  add_lossless_option(cmd, a->settings.lossless);
  cmd->add_option("--text", a->settings.text_path,
                  "make the -d context of this text's tokens (repeated if short) instead of "
                  "random ones: real text for --lossless's acceptance")
      ->check(CLI::ExistingFile);
  cmd->add_flag("!--no-warmup", a->settings.warmup,
                "skip the untimed warm-up run (a 32-token prefill and one decode step per policy)");
  cmd->add_flag("--json", a->json,
                "JSON Lines: one self-contained object per result row (with -p 0 -n 0 "
                "--bandwidth: one object); the same as -o jsonl");
  cmd->add_option("-o,--output", a->output,
                  "output format: md (a table), jsonl (one object per row, as measured), json "
                  "(an array), csv (every row's keys as columns)")
      ->capture_default_str();
  cmd->callback([a] { run_bench_command(*a); });
}

}  // namespace fasa::cli
