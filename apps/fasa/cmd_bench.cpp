// `fasa bench -m MODEL [-p N1,N2] [-n N1,N2] [-b B1,B2] [-d D1,D2] [-r R] [--threads T]
//            [--policy P1,P2 [policy flags] [--budget B1,B2]] [--compare SPEC]... [--bandwidth]
//            [--depth-fill prefill|synthetic] [--json]`
// llama-bench's conventions: ppN = prompt processing of N tokens, tgN = generation of N tokens
// one at a time, each measured after a context of depth D ("@ dD"), repeated R times (mean and
// standard deviation of tokens/s). The depth is a real prefill of random tokens, or with
// `--depth-fill synthetic` random keys and values stored straight into the cache
// (Session::fill_synthetic: the same store/on_append/commit path, no matmuls): a pp or tg step
// at depth D costs the same whatever the cache holds, so this measures speed only, and makes
// deep contexts on big models affordable. -p, -n and -d are comma lists: every depth runs every -p
// value, then every -n value, as its own test (0 = skip). With -b B > 1 a tg test ("tgNxB")
// decodes B sequences of the policy together, one forward pass per step (the server's
// batching), and its tokens/s counts all of them.
// The policies measured are --policy × --budget (each with the other policy flags folded in, as
// one --policy/--budget pair would be in `fasa run`), then every --compare spec. A policy that
// takes no options (`full`) gets no flags and appears once. They run side by side, alternating
// repetitions, and each speed is also given as a ratio to the first policy's.
// `--bandwidth` first measures the machine's read bandwidth and adds the roofline to every tg
// row: decoding reads all weights plus the KV it attends to per token, so bandwidth / those
// bytes bounds tokens/s, and the row reports the fraction of that bound it reached. With
// `-p 0 -n 0` it only prints the bandwidth.
// Output: a markdown table, or (-o, bench_output.h) one self-contained JSON object per row: JSON
// Lines (--json), a JSON array or CSV. JSON Lines and the markdown rows are printed as each test
// finishes, so an interrupted run keeps what it measured.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <utility>

#include <nlohmann/json.hpp>

#include "bench_output.h"
#include "cli_common.h"
#include "commands.h"
#include "fasa/attention/policy.h"
#include "fasa/core/amx.h"
#include "fasa/core/error.h"
#include "fasa/core/isa.h"
#include "fasa/core/parallel.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/prompt.h"
#include "fasa/engine/session.h"
#include "fasa/eval/roofline.h"
#include "fasa/io/gguf.h"
#include "fasa/kernels/bandwidth.h"
#include "provenance.h"

namespace fasa::cli {

namespace {

constexpr int kBandwidthPasses = 5;  // the probe reports the best of this many passes

struct BenchArgs {
  std::string model;
  // Comma lists, parsed by run_bench so that every bad element ends in one fasa error.
  std::string n_prompt = "512";
  std::string n_gen = "128";
  std::string batch = "1";
  std::string depths = "0";
  std::string depth_fill = "prefill";  // or "synthetic"
  int reps = 3;
  int threads = 0;
  std::string kv_type = "f16";
  PolicyArgs policy;                       // .policy and .budget are comma lists here
  bool json = false;                       // = -o jsonl
  std::string output = "md";               // bench_output.h: md, jsonl, json, csv
  RowFormat format = RowFormat::Markdown;  // from json/output, set by run_bench
  bool bandwidth = false;
  int64_t bandwidth_bytes = 1ll << 30;
  bool warmup = true;  // one untimed prefill + decode per policy first (llama-bench does too)
  std::string lossless = "off";  // engine/lossless.h: tg tests generate greedily, drafts verified
  std::string text;              // the -d context from this text's tokens (else random tokens)
};

struct Test {
  bool gen = false;  // tg (one token per step) or pp (one batch)
  int n = 0;
  int batch = 1;  // tg: sequences decoding together, one forward pass per step
  std::string name() const {
    return fmt::format("{}{}{}", gen ? "tg" : "pp", n, batch > 1 ? fmt::format("x{}", batch) : "");
  }
};

struct Measure {
  std::string policy;
  Test test;
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
  // --lossless (last repetition): the decoder's counts, the tokens generated, and whether they
  // equal the first policy's (`full` generates them plainly: lossless must give the same).
  LosslessStats lossless;
  std::vector<int32_t> generated;
  bool same_as_first = true;
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

// ---- the lists ----------------------------------------------------------------------------

// "a,b,c" -> {a, b, c}; an empty list or element is an error naming the flag.
std::vector<std::string> split_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (out.back().empty()) {
      fail("{} '{}': empty element (expected a comma-separated list)", flag, text);
    }
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// A list of token counts or depths, each a whole number >= 0.
std::vector<int> parse_counts(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  for (const std::string& s : split_list(flag, text)) {
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v < 0) {
      fail("{} '{}': '{}' is not a whole number >= 0", flag, text, s);
    }
    out.push_back(v);
  }
  return out;
}

// The tests of one depth in llama-bench's order: every -p value, then every -n value at every
// batch size; 0 skips.
std::vector<Test> bench_tests(const std::vector<int>& prompts, const std::vector<int>& gens,
                              const std::vector<int>& batches) {
  std::vector<Test> tests;
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

// --policy elements may be whole specs with options of their own ("oracle:budget=8,gqa=shared"),
// whose commas are the list's too: a piece that is key=value ('=' before any ':'; policy names
// hold neither) continues the spec before it, any other piece starts a new one.
std::vector<std::string> split_policies(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& piece : split_list("--policy", text)) {
    const size_t eq = piece.find('='), colon = piece.find(':');
    if (eq == std::string::npos || (colon != std::string::npos && colon < eq)) {
      out.push_back(piece);
    } else if (out.empty()) {
      fail("--policy '{}': option '{}' comes before any policy name", text, piece);
    } else {
      out.back() += "," + piece;
    }
  }
  return out;
}

// A policy that takes no options: the policy flags are not folded into it, and it is measured
// once however many budgets are given. The registry keeps no per-policy option list, so the
// rule is spelled out here: today only `full` (dense attention; its factory rejects every
// option). A spec with options of its own ("full:x=1") is passed on as written.
bool takes_no_options(const std::string& policy) { return policy == "full"; }

bool has_policy_flags(PolicyArgs p) {
  p.policy.clear();
  return !p.spec().empty();  // only the flags are left to fold in
}

// Two specs name the same policy when their names and options agree, in any order.
std::string canonical_spec(const std::string& spec) {
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  std::string s = name;
  for (const auto& [k, v] : opts) s.append(",").append(k).append("=").append(v);
  return s;
}

// The policies bench measures, in order: --policy × --budget (policy-major), then --compare.
// Measuring one policy twice is refused rather than silently dropped: it is always a typo, and
// the rows the user asked for should be the rows printed.
std::vector<std::string> bench_policy_specs(const PolicyArgs& args) {
  const std::vector<std::string> policies = split_policies(args.policy);
  const std::vector<std::string> budgets =
      args.budget.empty() ? std::vector<std::string>{""} : split_list("--budget", args.budget);
  const auto taker = std::find_if(policies.begin(), policies.end(),
                                  [](const std::string& p) { return !takes_no_options(p); });
  if (taker == policies.end() && has_policy_flags(args)) {
    fail(
        "--policy {}: the policy flags (--budget, --calib, ...) apply to none of these "
        "policies (full takes no options)",
        args.policy);
  }
  if (taker != policies.end()) {
    const std::string name = taker->substr(0, taker->find(':'));
    for (const std::string& b : budgets) {  // fail before the model loads, naming the list
      if (b.empty()) continue;
      try {
        parse_budget(name, b);
      } catch (const Error& e) {
        fail("--budget '{}': {}", args.budget, e.what());
      }
    }
  }
  std::vector<std::string> specs;
  for (const std::string& p : policies) {
    if (takes_no_options(p)) {
      specs.push_back(p);
      continue;
    }
    for (const std::string& b : budgets) {
      PolicyArgs one = args;
      one.policy = p;
      one.budget = b;
      specs.push_back(one.spec());
    }
  }
  specs.insert(specs.end(), args.compare.begin(), args.compare.end());
  std::map<std::string, std::string> seen;  // canonical -> as given
  for (const std::string& s : specs) {
    const auto [it, fresh] = seen.emplace(canonical_spec(s), s);
    if (fresh) continue;
    const std::string first = it->second == s ? "" : fmt::format(", first as '{}'", it->second);
    fail(
        "policy '{}' is listed twice (in --policy × --budget and --compare{}); list each "
        "policy once",
        s, first);
  }
  return specs;
}

// ---- measuring ----------------------------------------------------------------------------

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

// Random token ids (speed does not depend on them), as many as the longest use needs.
struct BenchTokens {
  std::vector<int32_t> ctx, pp, tg;
};

// The first n tokens of `text` (repeated when it is shorter): --text's real context.
std::vector<int32_t> text_tokens(const Model& model, const std::string& text, int n) {
  const std::vector<int32_t> all = text_prompt_tokens(model, text, false);
  if (all.empty()) fail("--text: the file holds no tokens");
  std::vector<int32_t> out(n);
  for (int i = 0; i < n; ++i) out[i] = all[i % all.size()];
  return out;
}

// The context before each measurement: `depth` prefilled tokens or synthetic rows.
void fill_context(Session& s, int depth, bool synthetic, const BenchTokens& tok) {
  if (depth == 0) return;
  if (synthetic) {
    s.fill_synthetic(depth, 1);
  } else {
    s.prefill(std::vector<int32_t>(tok.ctx.begin(), tok.ctx.begin() + depth));
  }
}

// Tokens per second of t.n decode steps with t.batch - 1 more sequences of the same policy
// (so.policy) and depth decoding alongside, one forward pass per step.
double decode_batch_tps(Session& session, const Test& t, int depth, bool synthetic,
                        const BenchTokens& tok, const std::shared_ptr<const Model>& model,
                        const SessionOptions& so) {
  std::vector<std::unique_ptr<Session>> mates;
  std::vector<SessionChunk> chunks{{&session, nullptr, 1}};
  for (int b = 1; b < t.batch; ++b) {
    mates.push_back(std::make_unique<Session>(model, so));
    fill_context(*mates.back(), depth, synthetic, tok);
    chunks.push_back({mates.back().get(), nullptr, 1});
  }
  ForwardScratch scratch;
  return static_cast<double>(t.n) * t.batch / seconds_of([&] {
           for (int i = 0; i < t.n; ++i) {
             for (SessionChunk& c : chunks) c.tokens = &tok.tg[i];
             Session::forward_many(chunks, scratch);
           }
         });
}

// Tokens per second of t.n decode steps: the session alone, or batched (decode_batch_tps).
double decode_tps(Session& session, const Test& t, int depth, bool synthetic,
                  const BenchTokens& tok, const std::shared_ptr<const Model>& model,
                  const SessionOptions& so) {
  if (t.batch > 1) return decode_batch_tps(session, t, depth, synthetic, tok, model, so);
  return t.n / seconds_of([&] {
           for (int i = 0; i < t.n; ++i) session.decode(tok.tg[i]);
         });
}

// --lossless: t.n tokens generated greedily from the context's last logits; `full` plainly, any
// other policy drafting and verifying. Tokens per second; the tokens and counts go to m.
double lossless_tps(Session& session, const Test& t, const LosslessOptions& lo, Measure& m) {
  GenerateOptions go;
  go.n_predict = t.n;
  go.sampler.temp = 0.0f;
  go.stop_at_eog = false;
  const bool plain = session.policy().name() == "full";
  m.lossless = LosslessStats{};
  GenerateResult r;
  const double s = seconds_of([&] {
    r = plain ? generate_from_prefilled(session, go, nullptr)
              : generate_lossless(session, go, lo, nullptr, &m.lossless);
  });
  m.generated = r.tokens;
  return t.n / s;
}

// One test at one depth for every policy. Repetitions alternate between the policies, so drift
// and noise on a shared machine hit every policy alike and the ratios stay fair.
std::vector<Measure> measure_test(const std::vector<std::unique_ptr<Session>>& sessions,
                                  const std::vector<std::string>& specs, const Test& t, int depth,
                                  int reps, const BenchTokens& tok,
                                  const std::shared_ptr<const Model>& model, SessionOptions so,
                                  bool synthetic, const LosslessOptions& lo) {
  std::vector<Measure> group;
  for (const std::string& spec : specs) {
    Measure m;
    m.policy = spec;
    m.test = t;
    m.depth = depth;
    group.push_back(m);
  }
  const std::vector<int32_t> pp(tok.pp.begin(), tok.pp.begin() + (t.gen ? 0 : t.n));
  for (int r = 0; r < reps; ++r) {
    for (size_t p = 0; p < specs.size(); ++p) {
      Session& session = *sessions[p];
      Measure& m = group[p];
      session.reset();
      const double fill_s = seconds_of([&] { fill_context(session, depth, synthetic, tok); });
      const ParallelStats par0 = parallel_stats();
      if (!t.gen) {
        m.tps.push_back(t.n / seconds_of([&] { session.prefill(pp); }));
        m.par = parallel_stats() - par0;
        continue;
      }
      so.policy = specs[p];
      double tps = lo.k > 0 ? lossless_tps(session, t, lo, m)
                            : decode_tps(session, t, depth, synthetic, tok, model, so);
      m.calib_s = -1.0;
      const OnlineCalibrationInfo* oc = session.facets().online_calibration();
      if (oc && oc->done && !oc->reused && t.batch == 1) {  // a one-time cost, reported apart
        m.calib_s = oc->seconds;
        m.fill_s = fill_s;
        tps = t.n / std::max(t.n / tps - oc->seconds, 1e-9);
      }
      m.tps.push_back(tps);
      m.par = parallel_stats() - par0;
      const AttnStats& st = session.attn_stats();
      const double toks = static_cast<double>(std::max<uint64_t>(st.decode_tokens, 1));
      m.kv_read_per_token =
          m.lossless.tokens > 0 ? m.lossless.kv_bytes_per_token() : st.bytes_read() / toks;
      m.dense_read_per_token = st.dense_bytes / toks;
      m.disk_read_per_token = st.tier_read_bytes / toks;
      m.disk_ms_per_token = st.tier_read_ns / 1e6 / toks;
      m.prefetch_read_per_token = st.tier_prefetch_bytes / toks;
      m.dense_fallback_share =
          st.decode_steps > 0 ? static_cast<double>(st.dense_fallbacks) / st.decode_steps : 0.0;
      m.prefetch_hit_share =
          st.tier_prefetch_rows > 0
              ? static_cast<double>(st.tier_prefetch_hits) / st.tier_prefetch_rows
              : 0.0;
      m.tier_rows_per_token = st.tier_rows / toks;
      m.tier_reads_per_token = st.tier_reads / toks;
      m.tier_cache_hit_share =
          st.tier_rows > 0 ? static_cast<double>(st.tier_cache_hits) / st.tier_rows : 0.0;
      m.kv_ram = session.cache().ram_bytes() + session.policy().resident_bytes();
      m.kv_file = session.cache().file_bytes();
      m.kv_global = session.cache().used_bytes_of(false);
      m.kv_window = session.cache().used_bytes_of(true);
    }
  }
  for (const Measure& full : group) {  // lossless: every policy's tokens are full attention's
    if (full.policy != "full") continue;
    for (Measure& m : group) m.same_as_first = m.generated == full.generated;
  }
  return group;
}

// ---- output -------------------------------------------------------------------------------

// The bandwidth roofline of a tg row: every weight is read once per token, plus the KV bytes
// that this policy's attention read.
Roofline roofline_of(const Measure& m, uint64_t weight_bytes, double read_gb_s) {
  return bandwidth_roofline(weight_bytes, m.kv_read_per_token, read_gb_s, m.mean());
}

// Prints the header once, then each test's rows (one per policy) as they are measured.
class Report {
 public:
  Report(const BenchArgs& a, const Model& model, const BandwidthResult& bw)
      : a_(a), model_(model), bw_(bw), writer_(a.format) {}

  void header() {
    if (a_.format != RowFormat::Markdown) return;  // every JSON row carries its own context
    const ModelConfig& c = model_.config();
    std::printf("model %s (%s), %d threads, KV %s, kernels %s, AMX %s, repack %s",
                c.name.empty() ? c.arch.c_str() : c.name.c_str(),
                human_bytes(model_.weight_bytes()).c_str(), num_threads(), a_.kv_type.c_str(),
                isa_name(active_isa()), amx_status().c_str(), model_.repack_status().c_str());
    if (a_.bandwidth) {
      std::printf(", read bandwidth %.2f GB/s (%s buffer)", bw_.read_gb_s,
                  human_bytes(bw_.bytes).c_str());
    }
    if (a_.depth_fill == "synthetic") {
      std::printf(", depth fill synthetic (random K/V rows: speed only)");
    }
    std::printf("\n\n");
    std::printf(
        "| policy | test | t/s | vs first | KV read/token | KV in RAM | KV on disk | "
        "disk read/token |%s\n",
        a_.bandwidth ? " bound t/s | roofline |" : "");
    std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |%s\n",
                a_.bandwidth ? " ---: | ---: |" : "");
  }

  // One test's rows; group[0] is the first policy, the base of "vs first".
  void rows(const std::vector<Measure>& group) {
    for (const Measure& m : group) {
      if (a_.format != RowFormat::Markdown) {
        writer_.add(json_row(m));
      } else {
        markdown_row(m, group.front());
      }
    }
    std::fflush(stdout);
  }

 private:
  nlohmann::ordered_json json_row(const Measure& m) const {
    nlohmann::ordered_json j = {{"model", model_.file().path()},
                                {"model_bytes", model_.weight_bytes()},
                                {"threads", num_threads()},
                                {"isa", isa_name(active_isa())},
                                {"amx", amx_status()},
                                {"repack", model_.repack_status()},
                                {"warmup", a_.warmup},
                                {"kv_type", a_.kv_type},
                                {"reps", a_.reps}};
    if (a_.bandwidth) j["read_bandwidth_gb_s"] = bw_.read_gb_s;
    j["policy"] = m.policy;
    add_provenance(j, model_.file().path(), m.policy);
    j["test"] = m.test.name();
    j["batch"] = m.test.batch;
    j["depth"] = m.depth;
    j["depth_fill"] = a_.depth_fill;
    j["n_tokens"] = m.test.n;
    j["tokens_per_s"] = m.mean();
    j["stddev"] = m.stddev();
    j["samples"] = m.tps;
    // Threads (last repetition): parallel dispatches (pool wake-ups; a decode step is one team)
    // and barriers (points where the workers wait for each other) per token, the share of thread
    // time spent waiting inside the regions, and the share of the run's time inside them at all
    // (the rest ran on one thread).
    const double n_tok = static_cast<double>(m.test.n) * m.test.batch;
    const double run_s = m.tps.empty() ? 0.0 : n_tok / m.tps.back();
    j["parallel_dispatches_per_token"] = static_cast<double>(m.par.dispatches) / n_tok;
    j["parallel_barriers_per_token"] = static_cast<double>(m.par.barriers) / n_tok;
    j["parallel_wait_share"] = m.par.wait_share();
    j["parallel_wall_share"] = run_s > 0.0 ? m.par.wall_s / run_s : 0.0;
    if (!m.test.gen) return j;
    j["kv_bytes_read_per_token"] = m.kv_read_per_token;
    j["dense_kv_bytes_read_per_token"] = m.dense_read_per_token;
    j["kv_resident_ram_bytes"] = m.kv_ram;
    j["kv_resident_file_bytes"] = m.kv_file;
    j["kv_global_layers_bytes"] = m.kv_global;
    j["kv_window_layers_bytes"] = m.kv_window;
    j["disk_bytes_read_per_token"] = m.disk_read_per_token;
    j["disk_read_ms_per_token"] = m.disk_ms_per_token;
    j["disk_prefetch_bytes_per_token"] = m.prefetch_read_per_token;
    j["disk_prefetch_hit_share"] = m.prefetch_hit_share;
    j["tier_rows_per_token"] = m.tier_rows_per_token;
    j["tier_reads_per_token"] = m.tier_reads_per_token;
    j["tier_row_cache_hit_share"] = m.tier_cache_hit_share;
    j["dense_fallback_share"] = m.dense_fallback_share;
    if (m.calib_s >= 0.0) {
      j["online_calibration_s"] = m.calib_s;
      j["depth_prefill_s"] = m.fill_s;
      j["online_calibration_share_of_prefill"] = m.fill_s > 0.0 ? m.calib_s / m.fill_s : 0.0;
    }
    j["lossless"] = a_.lossless;
    if (m.lossless.tokens > 0) {
      j["lossless_acceptance"] = m.lossless.acceptance();
      j["lossless_tokens_per_verification"] = m.lossless.tokens_per_verification();
      j["lossless_verifications"] = m.lossless.verifications;
      j["lossless_drafted"] = m.lossless.drafted;
      j["lossless_draft_ms"] = m.lossless.draft_ms;    // the drafts' decode steps, in all
      j["lossless_verify_ms"] = m.lossless.verify_ms;  // the verifications, in all
    }
    if (!m.generated.empty()) j["same_tokens_as_full"] = m.same_as_first;
    if (a_.bandwidth) {
      const Roofline r = roofline_of(m, model_.weight_bytes(), bw_.read_gb_s);
      j["bytes_per_token"] = r.bytes_per_token;
      j["roofline_tokens_per_s"] = r.tokens_per_s;
      j["roofline_fraction"] = r.fraction;
    }
    return j;
  }

  void markdown_row(const Measure& m, const Measure& base) const {
    const std::string name = m.test.name();
    const std::string test = m.depth > 0 ? fmt::format("{} @ d{}", name, m.depth) : name;
    const bool tg = m.test.gen;
    auto bytes = [&](double b) {
      return tg ? human_bytes(static_cast<uint64_t>(b)) : std::string();
    };
    const std::string disk = tg && m.kv_file > 0
                                 ? fmt::format("{} in {:.2f} ms ({:.0f}% of rows from RAM)",
                                               bytes(m.disk_read_per_token), m.disk_ms_per_token,
                                               100.0 * m.tier_cache_hit_share)
                                 : std::string();
    std::string roof;
    if (a_.bandwidth) {
      const Roofline r = roofline_of(m, model_.weight_bytes(), bw_.read_gb_s);
      roof = tg ? fmt::format(" {:.2f} | {:.1f}% |", r.tokens_per_s, 100.0 * r.fraction)
                : std::string("  |  |");
    }
    std::string ram = bytes(static_cast<double>(m.kv_ram));
    if (tg && m.kv_window > 0) {
      // A hybrid stack: split the RAM by layer type. The sliding-window rings are always whole
      // in RAM; the rest is the global layers' (their cache rows kept in RAM and the policy's
      // side data: all of it for FASA-C, only the packed key slices for FASA-M).
      const uint64_t global_ram = m.kv_ram > m.kv_window ? m.kv_ram - m.kv_window : 0;
      ram += fmt::format(" (global {}, window {})", bytes(static_cast<double>(global_ram)),
                         bytes(static_cast<double>(m.kv_window)));
    }
    std::string policy = m.policy;
    if (m.lossless.tokens > 0) {
      policy +=
          fmt::format(" (lossless {}: acceptance {:.1f}%, {:.2f} tokens/verification)", a_.lossless,
                      100.0 * m.lossless.acceptance(), m.lossless.tokens_per_verification());
    }
    if (!m.same_as_first) policy += " **tokens differ from full's**";
    if (m.calib_s >= 0.0) {
      policy +=
          fmt::format(" (online calibration {:.3f} s = {:.1f}% of the depth's prefill, {:.2f} s)",
                      m.calib_s, 100.0 * m.calib_s / std::max(m.fill_s, 1e-12), m.fill_s);
    }
    std::printf("| %s | %s | %.2f ± %.2f | %.2f | %s | %s | %s | %s |%s\n", policy.c_str(),
                test.c_str(), m.mean(), m.stddev(), m.mean() / std::max(base.mean(), 1e-12),
                bytes(m.kv_read_per_token).c_str(), ram.c_str(),
                tg && m.kv_file > 0 ? bytes(static_cast<double>(m.kv_file)).c_str() : "",
                disk.c_str(), roof.c_str());
  }

  const BenchArgs& a_;
  const Model& model_;
  const BandwidthResult& bw_;
  RowWriter writer_;

 public:
  void finish() {
    if (a_.format != RowFormat::Markdown) writer_.finish();
  }
};

void print_bandwidth_only(const BenchArgs& a, const BandwidthResult& bw) {
  if (a.format != RowFormat::Markdown) {
    RowWriter w(a.format);
    w.add({{"read_bandwidth_gb_s", bw.read_gb_s}, {"threads", bw.threads}, {"bytes", bw.bytes}});
    w.finish();
    return;
  }
  std::printf("read bandwidth: %.2f GB/s (%d thread%s, %s buffer, best of %d passes)\n",
              bw.read_gb_s, bw.threads, bw.threads == 1 ? "" : "s", human_bytes(bw.bytes).c_str(),
              kBandwidthPasses);
}

// The tests and depths to run (every flag is checked before the model loads and the probe
// runs).
struct BenchPlan {
  std::vector<Test> tests;
  std::vector<int> depths;
};
BenchPlan checked_plan(const BenchArgs& a) {
  const std::vector<int> prompts = parse_counts("-p", a.n_prompt);
  const std::vector<int> gens = parse_counts("-n", a.n_gen);
  std::vector<int> depths = parse_counts("-d", a.depths);
  const std::vector<int> batches = parse_counts("--batch", a.batch);
  for (int b : batches) {
    if (b < 1) fail("--batch values must be >= 1 (got {})", b);
  }
  const std::vector<Test> tests = bench_tests(prompts, gens, batches);
  if (tests.empty() && !a.bandwidth) {
    fail("nothing to measure: every -p and -n value is 0 (and no --bandwidth)");
  }
  if (a.bandwidth_bytes < static_cast<int64_t>(kMinBandwidthBytes)) {
    fail(
        "--bandwidth-bytes must be at least {} (64 MiB), so the probe reads memory and not "
        "cache (got {})",
        kMinBandwidthBytes, a.bandwidth_bytes);
  }
  if (a.reps < 1) fail("-r must be >= 1 (got {})", a.reps);
  if (a.depth_fill != "prefill" && a.depth_fill != "synthetic") {
    fail("--depth-fill '{}': expected prefill or synthetic", a.depth_fill);
  }
  if (parse_lossless(a.lossless).k > 0) {
    for (const Test& t : tests) {
      if (t.gen && t.batch > 1) fail("--lossless measures one sequence: use -b 1");
    }
    for (int d : depths) {
      if (d < 1 || a.depth_fill != "prefill") {
        fail(
            "--lossless generates from a prefilled context: give -d >= 1 with --depth-fill "
            "prefill");
      }
    }
  }
  return {tests, std::move(depths)};
}

// First touches of the weights, the pool's threads, AMX tiles: a short prefill and one decode
// step per session (fitting the context), untimed.
void warm_up(const std::vector<std::unique_ptr<Session>>& sessions, int n_ctx, int n_vocab) {
  const int n_warm = std::min(32, n_ctx - 1);
  const std::vector<int32_t> warm = bench_tokens(std::max(n_warm, 1), n_vocab, 4);
  for (const auto& s : sessions) {
    if (n_warm > 0) s->prefill(std::vector<int32_t>(warm.begin(), warm.begin() + n_warm));
    s->decode(warm[0]);
    s->reset();
  }
}

void run_bench(BenchArgs& a) {
  a.format = parse_row_format(a.output);
  if (a.json) {
    if (a.format != RowFormat::Markdown && a.format != RowFormat::JsonLines) {
      fail("--json is -o jsonl; it cannot be combined with -o {}", a.output);
    }
    a.format = RowFormat::JsonLines;
  }
  const BenchPlan plan = checked_plan(a);
  const std::vector<Test>& tests = plan.tests;
  const std::vector<int>& depths = plan.depths;
  const bool synthetic = a.depth_fill == "synthetic";
  apply_threads(a.threads);
  auto model = load_model(a.model);
  const std::vector<std::string> specs = resolved_specs(bench_policy_specs(a.policy), model);
  const ModelConfig& c = model->config();
  int longest = 0;
  for (const Test& t : tests) longest = std::max(longest, t.n);
  const int max_depth = *std::max_element(depths.begin(), depths.end());
  if (static_cast<int64_t>(max_depth) + longest > c.n_ctx_max()) {  // 64-bit: no overflow
    fail("depth {} + {} tokens exceeds the model's context length {}", max_depth, longest,
         c.n_ctx_max());
  }
  SessionOptions so;
  so.n_ctx = max_depth + longest;
  so.kv_type = parse_kv_type(a.kv_type);
  // The probe runs before any session exists, so its buffer and the KV caches never coexist.
  BandwidthResult bw;
  if (a.bandwidth) {
    std::fprintf(stderr, "fasa: measuring read bandwidth...\n");
    bw = measure_read_bandwidth(static_cast<uint64_t>(a.bandwidth_bytes), kBandwidthPasses);
  }
  if (tests.empty()) {
    print_bandwidth_only(a, bw);
    return;
  }
  std::vector<std::unique_ptr<Session>> sessions;
  for (const std::string& spec : specs) {
    so.policy = spec;
    sessions.push_back(std::make_unique<Session>(model, so));
    if (synthetic && max_depth > 0 && sessions.back()->facets().needs_prefill_queries()) {
      fail(
          "--depth-fill synthetic: policy '{}' learns from the prefill queries, which a "
          "synthetic fill does not make; use --depth-fill prefill",
          spec);
    }
  }
  const LosslessOptions lo = parse_lossless(a.lossless);
  BenchTokens tok;
  tok.ctx = a.text.empty() ? bench_tokens(std::max(max_depth, 1), c.n_vocab, 1)
                           : text_tokens(*model, read_text_file(a.text), std::max(max_depth, 1));
  tok.pp = bench_tokens(std::max(longest, 1), c.n_vocab, 2);
  tok.tg = bench_tokens(std::max(longest, 1), c.n_vocab, 3);
  Report report(a, *model, bw);
  report.header();
  if (a.warmup) warm_up(sessions, so.n_ctx, c.n_vocab);
  for (int d : depths) {
    for (const Test& t : tests) {
      report.rows(measure_test(sessions, specs, t, d, a.reps, tok, model, so, synthetic, lo));
    }
  }
  report.finish();
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
  cmd->add_option("-b,--batch", a->batch,
                  "sequences decoding together in tg tests, comma separated: one forward pass "
                  "per step for all (the server's batching); t/s counts every sequence's tokens")
      ->capture_default_str();
  cmd->add_option("-d,--depth", a->depths, "context depths, comma separated")
      ->capture_default_str();
  cmd->add_option("-r,--reps", a->reps, "repetitions")->capture_default_str();
  cmd->add_option("--depth-fill", a->depth_fill,
                  "how the -d context is made: prefill (random tokens through the model) or "
                  "synthetic (random K/V rows stored directly: speed only, no prefill cost)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--kv-type", a->kv_type, "KV cache type: f16, f32 or q8_0")
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
  cmd->add_flag("--bandwidth", a->bandwidth,
                "measure read bandwidth first; add the bandwidth roofline to tg rows (with -p 0 "
                "-n 0: only measure it)");
  cmd->add_option("--bandwidth-bytes", a->bandwidth_bytes,
                  "buffer size of the --bandwidth probe, >= 64 MiB")
      ->capture_default_str();
  add_lossless_option(cmd, a->lossless);
  cmd->add_option("--text", a->text,
                  "make the -d context of this text's tokens (repeated if short) instead of "
                  "random ones: real text for --lossless's acceptance")
      ->check(CLI::ExistingFile);
  cmd->add_flag("!--no-warmup", a->warmup,
                "skip the untimed warm-up run (a 32-token prefill and one decode step per policy)");
  cmd->add_flag("--json", a->json,
                "JSON Lines: one self-contained object per result row (with -p 0 -n 0 "
                "--bandwidth: one object); the same as -o jsonl");
  cmd->add_option("-o,--output", a->output,
                  "output format: md (a table), jsonl (one object per row, as measured), json "
                  "(an array), csv (every row's keys as columns)")
      ->capture_default_str();
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace fasa::cli
