// The `fasa` binary end to end: subcommands on tiny and real models, and every bad input ending
// in one clear error line, a non-zero exit and no crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/core/isa.h"
#include "fasa/core/sha256.h"
#include "fasa/engine/prompt.h"
#include "fasa/eval/sweep_checkpoint.h"
#include "fasa/eval/tasks.h"
#include "fasa/io/gguf.h"
#include "fasa/model/model.h"
#include "support/cli_runner.h"
#include "support/model_path.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

using test::expect_clean_error;
using test::run_cli;

std::string temp_file(const std::string& name) { return ::testing::TempDir() + "/" + name; }

// Exit 1, no signal, stderr is one "fasa: error: ..." line mentioning `needle`.
std::string tiny(const std::string& name, const test::TinySpec& spec) {
  const std::string path = temp_file(name);
  test::write_tiny_model(path, spec);
  return path;
}

// `fasa bench --json` prints JSON Lines: every line one complete object.
std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> rows;
  size_t start = 0;
  while (start < out.size()) {
    const size_t nl = out.find('\n', start);
    const std::string line = out.substr(start, nl == std::string::npos ? nl : nl - start);
    EXPECT_FALSE(line.empty()) << "empty line in: " << out;
    rows.push_back(nlohmann::json::parse(line));  // throws (and fails the test) on a bad line
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return rows;
}

std::vector<std::string> policies_of(const std::vector<nlohmann::json>& rows) {
  std::vector<std::string> p;
  for (const auto& row : rows) p.push_back(row["policy"]);
  return p;
}

TEST(CliTest, InspectTinyModelJson) {
  const std::string path = tiny("cli_tiny.gguf", {});
  const auto r = run_cli({"inspect", path, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["n_layers"], 2);
  EXPECT_EQ(j["n_kv_heads"], 2);
  EXPECT_EQ(j["rope"]["layout"], "norm");
  EXPECT_EQ(j["tensors"].size(), j["n_tensors"].get<size_t>());
  const auto text = run_cli({"inspect", path});
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("blk.1.ffn_down.weight"), std::string::npos);
}

TEST(CliTest, MissingAndUnreadableModels) {
  expect_clean_error(run_cli({"inspect", "/nonexistent/model.gguf"}), "cannot open model");
  expect_clean_error(run_cli({"inspect", "/tmp"}), "directory");
  const std::string junk = temp_file("junk.gguf");
  std::ofstream(junk) << "this is not a gguf file at all";
  expect_clean_error(run_cli({"inspect", junk}), "not a GGUF file");
}

TEST(CliTest, TruncatedModel) {
  const std::string path = tiny("cli_trunc_src.gguf", {});
  const auto bytes = std::filesystem::file_size(path);
  const std::string cut = temp_file("cli_trunc.gguf");
  std::filesystem::copy_file(path, cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, bytes / 2);
  expect_clean_error(run_cli({"inspect", cut}), "past end of file");
  std::filesystem::resize_file(cut, 40);
  const auto r = run_cli({"inspect", cut});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.signal, 0);
}

TEST(CliTest, UnknownArchitecture) {
  test::TinySpec s;
  s.arch = "mamba";
  expect_clean_error(run_cli({"inspect", tiny("cli_arch.gguf", s)}),
                     "unsupported architecture 'mamba'");
}

// RoPE scaling: linear and YaRN load (tests/model/forward_test.cpp and the family goldens check
// their logits); any other type, and a factor out of range, is one clear error naming the key.
TEST(CliTest, RopeScalingTypes) {
  test::TinySpec s;
  s.rope_scaling = "linear";
  s.rope_factor = 2.0f;
  EXPECT_EQ(run_cli({"inspect", tiny("cli_rope_linear.gguf", s)}).exit_code, 0);
  s.rope_scaling = "yarn";
  s.rope_factor = 4.0f;
  const test::CliRun yarn = run_cli({"inspect", tiny("cli_rope_yarn.gguf", s)});
  EXPECT_EQ(yarn.exit_code, 0) << yarn.err;
  EXPECT_NE(yarn.out.find("rope scaling  yarn, factor 4"), std::string::npos) << yarn.out;
  s.rope_scaling = "dynamic";
  expect_clean_error(run_cli({"inspect", tiny("cli_rope_dynamic.gguf", s)}),
                     "'llama.rope.scaling.type' = 'dynamic' is not supported");
  s.rope_scaling = "linear";
  s.rope_factor = 0.5f;
  expect_clean_error(run_cli({"inspect", tiny("cli_rope_factor.gguf", s)}),
                     "RoPE scaling factor 0.5 must be in [1, 1024]");
}

TEST(CliTest, Qwen2NeedsItsBiases) {
  test::TinySpec s;
  s.arch = "qwen2";
  const auto ok = run_cli({"inspect", tiny("cli_qwen2.gguf", s)});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("qwen2"), std::string::npos) << ok.out;
  s.omit_tensor = "blk.1.attn_k.bias";
  expect_clean_error(run_cli({"inspect", tiny("cli_qwen2_nobias.gguf", s)}),
                     "missing tensor 'blk.1.attn_k.bias'");
}

TEST(CliTest, Gemma3KeysAndTensors) {
  test::TinySpec s;
  s.arch = "gemma3";
  s.n_layers = 4;
  s.sliding_window = 8;
  s.window_pattern = 2;
  const auto ok = run_cli({"inspect", tiny("cli_gemma3.gguf", s)});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("gelu_tanh, qk-norm, post-norms"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("2 sliding-window layers (window 8, rope base 10000), global layers 1,3"),
            std::string::npos)
      << ok.out;
  test::TinySpec bad = s;
  bad.sliding_window = 0;  // key not written
  expect_clean_error(run_cli({"inspect", tiny("cli_gemma3_nowin.gguf", bad)}),
                     "missing metadata 'gemma3.attention.sliding_window'");
  bad = s;
  bad.omit_tensor = "blk.2.attn_q_norm.weight";
  expect_clean_error(run_cli({"inspect", tiny("cli_gemma3_noqn.gguf", bad)}),
                     "missing tensor 'blk.2.attn_q_norm.weight'");
  bad = s;
  bad.omit_tensor = "blk.0.post_ffw_norm.weight";
  expect_clean_error(run_cli({"inspect", tiny("cli_gemma3_nopost.gguf", bad)}),
                     "missing tensor 'blk.0.post_ffw_norm.weight'");
  bad = s;
  bad.rope_base_local = 0.5f;
  expect_clean_error(run_cli({"inspect", tiny("cli_gemma3_base.gguf", bad)}),
                     "'gemma3.rope.freq_base_swa' = 0.5 must be in (1, 1e12]");
}

TEST(CliTest, MissingTensor) {
  test::TinySpec s;
  s.omit_tensor = "blk.1.ffn_up.weight";
  expect_clean_error(run_cli({"inspect", tiny("cli_missing.gguf", s)}),
                     "missing tensor 'blk.1.ffn_up.weight'");
}

TEST(CliTest, WrongShapeTensor) {
  test::TinySpec s;
  s.transposed_tensor = "blk.0.ffn_gate.weight";
  expect_clean_error(run_cli({"inspect", tiny("cli_shape.gguf", s)}),
                     "'blk.0.ffn_gate.weight' has shape");
}

TEST(CliTest, TensorTypeWithoutKernel) {
  test::TinySpec s;
  s.i32_tensor = "blk.0.attn_k.weight";
  expect_clean_error(run_cli({"inspect", tiny("cli_type.gguf", s)}), "type I32");
}

// FASA_ISA picks the kernel set: a malformed name is one clear error before any work; the
// scalar set, which every x86-64 CPU has, runs (the sets' equal bits are kernel tests).
TEST(CliTest, IsaEnvironmentVariable) {
  expect_clean_error(run_cli({"inspect", "/nonexistent/model.gguf"}, {{"FASA_ISA", "sse9"}}),
                     "unknown instruction set 'sse9'");
  const std::string path = tiny("cli_isa.gguf", {});
  const auto r = run_cli({"bench", "-m", path, "-p", "8", "-n", "2", "-r", "1", "--json"},
                         {{"FASA_ISA", "scalar"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"test\":\"tg2\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"isa\":\"scalar\""), std::string::npos) << r.out;
  // Every JSON line names its build and the model's sha256.
  const std::string model_sha = fasa::sha256_file_hex(path);
  const std::string first_line = r.out.substr(0, r.out.find('\n'));
  const auto row = nlohmann::json::parse(first_line);
  EXPECT_EQ(row["model_sha256"], model_sha);
  EXPECT_TRUE(row.contains("fasa_version")) << first_line;
}

TEST(CliTest, NoSubcommandOrBadFlags) {
  EXPECT_NE(run_cli({}).exit_code, 0);
  EXPECT_NE(run_cli({"frobnicate"}).exit_code, 0);
  const std::string path = tiny("cli_flags.gguf", {});
  expect_clean_error(run_cli({"bench", "-m", path, "-p", "abc"}), "-p 'abc'");
  expect_clean_error(run_cli({"bench", "-m", path, "-p", "0", "-n", "0"}), "nothing to measure");
  expect_clean_error(run_cli({"bench", "-m", path, "-d", "100000"}), "context length");
  expect_clean_error(run_cli({"bench", "-m", path, "-p", "8", "--policy", "bogus"}),
                     "unknown attention policy");
  expect_clean_error(run_cli({"bench", "-m", path, "-p", "8", "--kv-type", "q3"}),
                     "unknown KV cache type");
  expect_clean_error(run_cli({"bench", "-m", path, "--threads", "-3"}), "--threads");
}

// `fasa --version` prints the release and, when built in a git checkout, the commit (the form
// of "fasa_version" in the sweep summary); it needs no subcommand.
TEST(CliTest, Version) {
  const auto r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      std::regex_match(r.out, std::regex(R"(\d+\.\d+\.\d+( \([0-9a-f]{7,}(-dirty)?\))?\n)")))
      << r.out;
}

TEST(CliTest, BenchTinyModelJson) {
  const std::string path = tiny("cli_bench.gguf", {});
  const auto r =
      run_cli({"bench", "-m", path, "-p", "16", "-n", "4", "-d", "0,8", "-r", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 4u);  // pp16, tg4 at depths 0 and 8
  for (const auto& row : rows) {
    EXPECT_GT(row["tokens_per_s"].get<double>(), 0.0);
    EXPECT_EQ(row["samples"].size(), 2u);
  }
  EXPECT_EQ(rows[2]["depth"], 8);
}

// --sequences runs each tg test with S sequences decoding together; pp tests are not batched.
TEST(CliTest, BenchBatch) {
  const std::string path = tiny("cli_bench_batch.gguf", {});
  const auto r = run_cli({"bench", "-m", path, "-p", "8", "-n", "4", "--sequences", "1,3", "-d",
                          "4", "-r", "1", "--policy", "full,streaming", "--budget", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 6u);  // (pp8, tg4, tg4x3) x (full, streaming)
  EXPECT_EQ(rows[0]["test"], "pp8");
  EXPECT_EQ(rows[2]["test"], "tg4");
  EXPECT_EQ(rows[4]["test"], "tg4x3");
  EXPECT_EQ(rows[4]["batch"], 3);
  EXPECT_EQ(rows[5]["policy"], "streaming:budget=2");
  EXPECT_GT(rows[5]["tokens_per_s"].get<double>(), 0.0);
  // Per-sequence KV reads do not change with the batch: each sequence reads its own cache.
  EXPECT_EQ(rows[5]["kv_bytes_read_per_token"], rows[3]["kv_bytes_read_per_token"]);
  expect_clean_error(run_cli({"bench", "-m", path, "-n", "4", "--sequences", "0"}), "--sequences");
  expect_clean_error(run_cli({"bench", "-m", path, "-n", "4", "--sequences", "2,x"}),
                     "--sequences");
}

// -p and -n are lists, each value its own test, at every depth: pp values, then tg values.
TEST(CliTest, BenchTestLists) {
  const std::string path = tiny("cli_bench_lists.gguf", {});
  const auto r =
      run_cli({"bench", "-m", path, "-p", "8,16", "-n", "4", "-d", "0,4", "-r", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 6u);
  const std::vector<std::pair<std::string, int>> want = {{"pp8", 0}, {"pp16", 0}, {"tg4", 0},
                                                         {"pp8", 4}, {"pp16", 4}, {"tg4", 4}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(rows[i]["test"], want[i].first) << i;
    EXPECT_EQ(rows[i]["depth"], want[i].second) << i;
  }
  EXPECT_EQ(rows[1]["n_tokens"], 16);
  // 0 skips a value; markdown (the default) has the same rows.
  const auto md = run_cli({"bench", "-m", path, "-p", "0,8", "-n", "0,2,4", "-d", "4", "-r", "1"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  for (const char* row : {"| full | pp8 @ d4 |", "| full | tg2 @ d4 |", "| full | tg4 @ d4 |"}) {
    EXPECT_NE(md.out.find(row), std::string::npos) << row << " in:\n" << md.out;
  }
  EXPECT_EQ(md.out.find("pp0"), std::string::npos) << md.out;
  EXPECT_EQ(md.out.find("tg0"), std::string::npos) << md.out;
}

// Every --json line stands alone: run context, policy, test and its numbers; tg rows add the KV
// accounting, pp rows leave it out.
TEST(CliTest, BenchJsonLinesAreSelfContained) {
  const std::string path = tiny("cli_bench_jsonl.gguf", {});
  const auto r = run_cli({"bench", "-m", path, "-p", "8", "-n", "2", "-d", "4", "-r", "2",
                          "--threads", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    for (const char* key : {"model", "model_bytes", "threads", "kv_type", "reps", "policy", "test",
                            "depth", "n_tokens", "tokens_per_s", "stddev", "samples"}) {
      EXPECT_TRUE(row.contains(key)) << key << " missing in " << row.dump();
    }
    EXPECT_EQ(row["model"], path);
    EXPECT_GT(row["model_bytes"].get<double>(), 0.0);
    EXPECT_EQ(row["threads"], 1);
    EXPECT_EQ(row["kv_type"], "f16");
    EXPECT_EQ(row["reps"], 2);
    EXPECT_EQ(row["policy"], "full");
    EXPECT_FALSE(row.contains("results"));
    EXPECT_FALSE(row.contains("read_bandwidth_gb_s"));
  }
  EXPECT_EQ(rows[0]["test"], "pp8");
  EXPECT_FALSE(rows[0].contains("kv_bytes_read_per_token"));
  EXPECT_EQ(rows[1]["test"], "tg2");
  for (const char* key :
       {"kv_bytes_read_per_token", "dense_kv_bytes_read_per_token", "kv_resident_ram_bytes",
        "kv_resident_file_bytes", "disk_bytes_read_per_token", "disk_read_ms_per_token"}) {
    EXPECT_TRUE(rows[1].contains(key)) << key;
  }
}

// An untimed warm-up (32-token prefill and one decode step, or less in a short context) runs
// first unless --no-warmup; every row says which, and which weights were repacked.
TEST(CliTest, BenchWarmupAndRepackInRows) {
  const std::string path = tiny("cli_bench_warmup.gguf", {});
  for (const bool warm : {true, false}) {
    std::vector<std::string> args{"bench", "-m", path, "-p", "0", "-n", "1", "-r", "1", "--json"};
    if (!warm) args.push_back("--no-warmup");
    const auto r = run_cli(args);  // a 1-token context: the warm-up is one decode step
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = json_lines(r.out);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["warmup"], warm);
    EXPECT_TRUE(rows[0]["repack"].get<std::string>().rfind("off", 0) == 0) << rows[0].dump();
  }
}

// --policy × --budget, each with the other policy flags, then --compare; `full` takes no
// options and appears once.
TEST(CliTest, BenchPolicyBudgetCrossProduct) {
  const std::string path = tiny("cli_bench_cross.gguf", {});
  const std::vector<std::string> base = {"bench", "-m", path, "-p", "0", "-n",
                                         "2",     "-d", "8",  "-r", "1", "--json"};
  auto bench = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  auto r = bench({"--policy", "full,oracle", "--budget", "3,5", "--gqa", "per-head", "--compare",
                  "oracle:budget=7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = json_lines(r.out);
  EXPECT_EQ(policies_of(rows),
            (std::vector<std::string>{"full", "oracle:budget=3,gqa=per-head",
                                      "oracle:budget=5,gqa=per-head", "oracle:budget=7"}));
  for (const auto& row : rows) EXPECT_EQ(row["test"], "tg2");
  EXPECT_LT(rows[1]["kv_bytes_read_per_token"].get<double>(),
            rows[2]["kv_bytes_read_per_token"].get<double>());  // budget 3 reads less than 5
  // A spec with options of its own keeps them (its commas are not list separators); policy-major
  // order.
  r = bench({"--policy", "oracle:gqa=per-head,oracle,full", "--budget", "3,4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(policies_of(json_lines(r.out)),
            (std::vector<std::string>{"oracle:gqa=per-head,budget=3",
                                      "oracle:gqa=per-head,budget=4", "oracle:budget=3",
                                      "oracle:budget=4", "full"}));
  // Markdown: one row per policy, ratios to the first.
  const auto md = run_cli({"bench", "-m", path, "-p", "0", "-n", "2", "-r", "1", "--policy",
                           "full,oracle", "--budget", "2,3"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| full | tg2 | "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| oracle:budget=2 | tg2 | "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| oracle:budget=3 | tg2 | "), std::string::npos) << md.out;
}

// Bad list elements and duplicate policies end in one clear error before anything runs.
TEST(CliTest, BenchBadLists) {
  const std::string path = tiny("cli_bench_badlists.gguf", {});
  auto bench = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"bench", "-m", path, "-r", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  expect_clean_error(bench({"-p", "8,-1"}), "-p '8,-1': '-1' is not a whole number >= 0");
  expect_clean_error(bench({"-p", "8,,16"}), "-p '8,,16': empty element");
  expect_clean_error(bench({"-n", "4,"}), "-n '4,': empty element");
  expect_clean_error(bench({"-n", "4.5"}), "-n '4.5'");
  expect_clean_error(bench({"-d", "0,x"}), "-d '0,x': 'x'");
  expect_clean_error(bench({"-d", "99999999999"}), "-d '99999999999'");
  expect_clean_error(bench({"--policy", "oracle", "--budget", "64,x"}),
                     "--budget '64,x': policy 'oracle': budget must be a positive number");
  expect_clean_error(bench({"--policy", "oracle", "--budget", "64,,8"}),
                     "--budget '64,,8': empty element");
  expect_clean_error(bench({"--policy", "oracle", "--budget", "1.5"}), "whole number");
  expect_clean_error(bench({"--policy", "full,", "--budget", "4"}), "--policy 'full,': empty");
  expect_clean_error(bench({"--policy", "budget=4,oracle"}), "comes before any policy name");
  expect_clean_error(bench({"-p", "8", "--policy", "full,bogus"}),
                     "unknown attention policy 'bogus'");
  // Duplicates are refused, also when spelled differently or coming from --compare.
  expect_clean_error(bench({"--policy", "full,full"}), "listed twice");
  expect_clean_error(bench({"--policy", "oracle", "--budget", "4,8,4"}),
                     "'oracle:budget=4' is listed twice");
  expect_clean_error(bench({"--policy", "oracle:gqa=shared", "--budget", "4", "--compare",
                            "oracle:budget=4,gqa=shared"}),
                     "listed twice");
  // Flags that no listed policy takes.
  expect_clean_error(bench({"--policy", "full", "--budget", "8,16"}), "apply to none");
}

// Several policies in one bench run: one row per (test, policy), each with its KV accounting.
TEST(CliTest, BenchComparesPolicies) {
  const std::string path = tiny("cli_bench_compare.gguf", {});
  const auto r = run_cli({"bench", "-m", path, "-p", "0", "-n", "4", "-d", "12", "-r", "2",
                          "--policy", "full", "--compare", "oracle:budget=3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["policy"], "full");
  EXPECT_EQ(rows[1]["policy"], "oracle:budget=3");
  for (const auto& row : rows) {
    EXPECT_EQ(row["samples"].size(), 2u);
    EXPECT_GT(row["kv_resident_ram_bytes"].get<double>(), 0.0);
    EXPECT_EQ(row["kv_resident_file_bytes"].get<double>(), 0.0);
  }
  EXPECT_LT(rows[1]["kv_bytes_read_per_token"].get<double>(),
            rows[0]["kv_bytes_read_per_token"].get<double>());
}

// `--bandwidth` alone (-p 0 -n 0) prints only the probe's result.
TEST(CliTest, BenchBandwidthOnly) {
  const std::string path = tiny("cli_bench_bw.gguf", {});
  const auto r = run_cli({"bench", "-m", path, "--bandwidth", "--bandwidth-bytes", "67108864", "-p",
                          "0", "-n", "0", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("measuring read bandwidth"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["read_bandwidth_gb_s"].get<double>(), 0.0);
  EXPECT_GE(j["threads"].get<int>(), 1);
  EXPECT_EQ(j["bytes"].get<uint64_t>(), 67108864u);
  const auto text = run_cli(
      {"bench", "-m", path, "--bandwidth", "--bandwidth-bytes", "67108864", "-p", "0", "-n", "0"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("read bandwidth: "), std::string::npos) << text.out;
}

// With tests to run, `--bandwidth` adds the roofline to tg rows (and leaves pp rows alone).
TEST(CliTest, BenchBandwidthRoofline) {
  const std::string path = tiny("cli_bench_roofline.gguf", {});
  const auto r = run_cli({"bench", "-m", path, "-p", "0", "-n", "4", "-d", "8", "-r", "1",
                          "--bandwidth", "--bandwidth-bytes", "67108864", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 1u);
  for (const auto& row : rows) {
    EXPECT_GT(row["read_bandwidth_gb_s"].get<double>(), 0.0);
    EXPECT_EQ(row["test"], "tg4");
    EXPECT_GT(row["bytes_per_token"].get<double>(), row["model_bytes"].get<double>());
    EXPECT_GT(row["roofline_tokens_per_s"].get<double>(), 0.0);
    EXPECT_GT(row["roofline_fraction"].get<double>(), 0.0);
  }
  const auto text = run_cli({"bench", "-m", path, "-p", "8", "-n", "4", "-r", "1", "--bandwidth",
                             "--bandwidth-bytes", "67108864"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("| bound t/s | roofline |"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("% |"), std::string::npos) << text.out;
  // Without --bandwidth nothing changes.
  const auto plain = run_cli({"bench", "-m", path, "-p", "0", "-n", "4", "-r", "1", "--json"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto prows = json_lines(plain.out);
  ASSERT_EQ(prows.size(), 1u);
  EXPECT_FALSE(prows[0].contains("read_bandwidth_gb_s"));
  EXPECT_FALSE(prows[0].contains("roofline_fraction"));
}

TEST(CliTest, BenchBandwidthBadSize) {
  const std::string path = tiny("cli_bench_bw_bad.gguf", {});
  expect_clean_error(run_cli({"bench", "-m", path, "--bandwidth", "--bandwidth-bytes", "1000", "-p",
                              "0", "-n", "0"}),
                     "--bandwidth-bytes");
  expect_clean_error(run_cli({"bench", "-m", path, "--bandwidth", "--bandwidth-bytes", "-5", "-n",
                              "4"}),
                     "--bandwidth-bytes");
}

TEST(CliTest, BadCompareAndOffloadFlags) {
  const std::string path = tiny("cli_bad_compare.gguf", {});
  expect_clean_error(run_cli({"bench", "-m", path, "-p", "8", "--compare", "bogus"}),
                     "unknown attention policy");
  expect_clean_error(run_cli({"bench", "-m", path, "-p", "8", "--compare", "oracle:budget=x"}),
                     "budget");
  expect_clean_error(run_cli({"bench", "-m", path, "-p", "8", "--policy", "fasa", "--calib",
                              "/nonexistent/c.json", "--budget", "8", "--variant", "m",
                              "--offload-dir", "/nonexistent/dir"}),
                     "offload directory");
  expect_clean_error(run_cli({"bench", "-m", path, "-p", "8", "--policy", "fasa", "--calib",
                              "/nonexistent/c.json", "--budget", "8", "--offload-dir", "/tmp"}),
                     "variant m only");
}

TEST(CliTest, ModelWithoutTokenizerCannotRun) {
  const std::string path = tiny("cli_notok.gguf", {});
  expect_clean_error(run_cli({"run", "-m", path, "-p", "hi"}), "no tokenizer");
  expect_clean_error(run_cli({"tokenize", "-m", path, "-p", "hi"}), "no tokenizer");
}

TEST(CliTest, TaskCommandsRejectBadInput) {
  const std::string model = tiny("cli_tasks.gguf", test::TinySpec{});
  const std::string bad = temp_file("cli_bad_tasks.jsonl");
  std::ofstream(bad)
      << R"({"id": "a", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": "exact"})"
      << "\n{\"id\": \"b\"}\n";
  expect_clean_error(run_cli({"eval", "tasks", "-m", model, "--tasks", bad}),
                     "cli_bad_tasks.jsonl:2: missing field \"task\"");
  expect_clean_error(run_cli({"eval", "tasks", "-m", model, "--tasks", "/nonexistent.jsonl"}),
                     "cannot read task file");
  const std::string good = temp_file("cli_good_tasks.jsonl");
  std::ofstream(good)
      << R"({"id": "a", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": "exact"})"
      << "\n";
  expect_clean_error(run_cli({"eval", "tasks", "-m", model, "--tasks", good, "--jobs", "0"}),
                     "--jobs must be >= 1 (got 0)");
  expect_clean_error(run_cli({"eval", "sweep", "-m", model, "--tasks", bad, "--policies", "oracle",
                              "--budgets", "x", "-o", temp_file("sweep_bad")}),
                     "budget must be a positive number");
  expect_clean_error(run_cli({"gen-tasks", "-m", model, "--kind", "haystack", "--haystack", bad,
                              "-o", temp_file("x.jsonl")}),
                     "unknown task kind 'haystack'");
  expect_clean_error(run_cli({"gen-tasks", "-m", model, "--kind", "qa", "--haystack",
                              "/nonexistent.txt", "-o", temp_file("x.jsonl")}),
                     "/nonexistent.txt");
}

// ---- real model -------------------------------------------------------------------------

TEST(CliRealModel, TokenizeAndPieces) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto r = run_cli({"tokenize", "-m", path, "-p", "Hello world", "--pieces"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "19556 905");
  EXPECT_NE(r.out.find("\t world"), std::string::npos) << r.out;
}

// Tokenizing needs only the tokenizer metadata: it works for Gemma 3, whose forward pass the
// engine may not run. Ids from llama.cpp (tests/data/tokenizer/gemma3_goldens.json).
TEST(CliRealModel, TokenizeGemma3) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  auto r = run_cli({"tokenize", "-m", path, "-p", "Hello world", "--bos", "--pieces"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2 9259 1902\n2\t<bos>\n9259\tHello\n1902\t world\n");
  r = run_cli({"tokenize", "-m", path, "-p", "<start_of_turn>user\nHi<end_of_turn>"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "105 2364 107 10979 106\n");
}

// The README's first command. llama.cpp answers this prompt greedily with "The capital of France
// is Paris." (scripts/dev/llamacpp_chat_greedy.py).
TEST(CliRealModel, ChatAnswersParis) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto r = run_cli({"run", "-m", path, "--chat", "-p",
                          "What is the capital of France? Answer in one sentence.", "-n", "24",
                          "--temp", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Paris"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("tok/s"), std::string::npos) << r.err;  // statistics on stderr
  EXPECT_EQ(r.out.find("tok/s"), std::string::npos);
}

TEST(CliRealModel, SeededSamplingIsReproducible) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const std::vector<std::string> args = {"run", "-m", path,     "-p",  "Once upon a time",
                                         "-n",  "12", "--temp", "0.9", "--seed",
                                         "7",   "-q"};
  const auto a = run_cli(args), b = run_cli(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(CliRealModel, StopString) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto full = run_cli({"run", "-m", path, "--chat", "-p", "What is the capital of France?",
                             "-n", "24", "--temp", "0", "-q"});
  ASSERT_EQ(full.exit_code, 0);
  const auto cut = run_cli({"run", "-m", path, "--chat", "-p", "What is the capital of France?",
                            "-n", "24", "--temp", "0", "-q", "--stop", "Paris"});
  ASSERT_EQ(cut.exit_code, 0);
  EXPECT_EQ(cut.out.find("Paris"), std::string::npos) << cut.out;
  EXPECT_EQ(full.out.substr(0, cut.out.size() - 1), cut.out.substr(0, cut.out.size() - 1));
}

TEST(CliRealModel, BadPrompts) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  std::string long_prompt;
  for (int i = 0; i < 200; ++i) long_prompt += "word ";
  expect_clean_error(run_cli({"run", "-m", path, "-p", long_prompt, "--ctx", "64"}),
                     "longer than the context");
  expect_clean_error(run_cli({"run", "-m", path, "-p", std::string("ab\xff\xfe", 4)}),
                     "not valid UTF-8");
  expect_clean_error(run_cli({"tokenize", "-m", path, "-p", std::string("\xc3", 1)}),
                     "not valid UTF-8");
  expect_clean_error(run_cli({"run", "-m", path, "-f", "/nonexistent/prompt.txt"}), "cannot read");
  expect_clean_error(run_cli({"run", "-m", path}), "exactly one of -p TEXT or -f FILE");
  expect_clean_error(run_cli({"run", "-m", path, "-p", "x", "--temp", "-1"}), "temperature");
  expect_clean_error(run_cli({"run", "-m", path, "-p", "x", "--top-p", "2"}), "top-p");
  expect_clean_error(run_cli({"run", "-m", path, "-p", "x", "--ctx", "100000"}),
                     "exceeds the model's trained context");
  expect_clean_error(run_cli({"run", "-m", "no-such-model", "-p", "x"}), "not a known model");
}

TEST(CliRealModel, EvalPplDecodeRecordsKvBytesPerToken) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  FASA_TEXT_OR_SKIP(text, "austen_emma.txt");
  const auto r =
      run_cli({"eval",     "ppl",      "-m",        path,       "--text", text,       "--ctx",
               "64",       "--chunks", "1",         "--decode", "16",     "--policy", "streaming",
               "--budget", "16",       "--compare", "full",     "--json", "-t",       "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out)["results"];
  ASSERT_EQ(j.size(), 2u);
  // SmolLM2: 30 layers x 3 kv heads, a K and a V row of 64 f16 each per token (768 B per layer
  // and token, 23040 B over the layers). Streaming reads its 16 rows at every step.
  EXPECT_EQ(j[0]["decode_kv_bytes_read_per_token"].get<double>(), 16.0 * 23040);
  EXPECT_EQ(j[1]["decode_kv_bytes_read_per_token"], j[1]["dense_kv_bytes_read_per_token"]);
  EXPECT_EQ(j[0]["dense_kv_bytes_read_per_token"], j[1]["dense_kv_bytes_read_per_token"]);
  EXPECT_GT(j[1]["dense_kv_bytes_read_per_token"].get<double>(), 48.0 * 23040);  // >= 48 rows
  // Without --decode there are no decode steps: no such fields.
  const auto b = run_cli(
      {"eval", "ppl", "-m", path, "--text", text, "--ctx", "64", "--chunks", "1", "--json"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_FALSE(nlohmann::json::parse(b.out).contains("decode_kv_bytes_read_per_token"));
}

TEST(CliRealModel, EvalPplJsonAndShortText) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  FASA_TEXT_OR_SKIP(text, "austen_emma.txt");
  const auto r = run_cli(
      {"eval", "ppl", "-m", path, "--text", text, "--ctx", "64", "--chunks", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["n_chunks"], 2);
  EXPECT_EQ(j["n_scored"], 2 * 31);
  EXPECT_GT(j["ppl"].get<double>(), 1.0);
  EXPECT_LT(j["ppl"].get<double>(), 1000.0);
  EXPECT_GT(j["ppl_se"].get<double>(), 0.0);
  // Provenance: the build and the hashes of the model and the text (no calibration: full).
  EXPECT_EQ(j["model_sha256"], fasa::sha256_file_hex(path));
  EXPECT_EQ(j["text_sha256"], "7c67b5985c6d0de1efaeb5d342d52cb82c38083c40e2295129e30e87ee690ebe");
  EXPECT_FALSE(j.contains("calib_sha256"));
  EXPECT_NE(j["fasa_version"].get<std::string>().find('('), std::string::npos) << j["fasa_version"];
  // ... and the kernels that ran (dense bits differ with and without AMX tiles).
  EXPECT_EQ(j["kernels"].get<std::string>().rfind(isa_name(active_isa()) + std::string(", AMX "),
                                                  0),
            0u)
      << j["kernels"];
  const std::string short_text = temp_file("short.txt");
  std::ofstream(short_text) << "Too short.";
  expect_clean_error(run_cli({"eval", "ppl", "-m", path, "--text", short_text, "--ctx", "512"}),
                     "fewer than one chunk");
  expect_clean_error(run_cli({"eval", "ppl", "-m", path, "--text", "/nonexistent.txt"}),
                     "cannot read");
}

// gen-tasks → eval tasks → eval sweep on the real model, small: every file is written and
// every JSON parses, prompts fit the context the tokenizer measures.
TEST(CliRealModel, GenTasksEvalTasksAndSweep) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  FASA_TEXT_OR_SKIP(hay, "austen_northanger_abbey.txt");
  const std::string tasks = temp_file("cli_gen_passkey.jsonl");
  auto r = run_cli({"gen-tasks", "-m", path, "--kind", "passkey", "--haystack", hay, "--ctx", "160",
                    "--n", "2", "--seed", "3", "-o", tasks});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 2 passkey tasks"), std::string::npos) << r.out;
  r = run_cli({"eval", "tasks", "-m", path, "--tasks", tasks, "--policy", "streaming", "--budget",
               "16", "--compare", "full", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["policy"], "streaming:budget=16");
  EXPECT_LE(j["n_ctx"].get<int>(), 160);
  EXPECT_EQ(j["items"].size(), 4u);
  EXPECT_EQ(j["tasks_sha256"], fasa::sha256_file_hex(tasks));
  EXPECT_EQ(j["model_sha256"], fasa::sha256_file_hex(path));
  EXPECT_EQ(j["kv_type"], "f16");
  const std::string dir = temp_file("cli_sweep");
  std::filesystem::remove_all(dir);
  r = run_cli({"eval", "sweep", "-m", path, "--tasks", tasks, "--policies", "full,streaming",
               "--budgets", "16,32", "-o", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = nlohmann::json::parse(std::ifstream(dir + "/results.json"));
  ASSERT_EQ(s["results"].size(), 3u);
  // Each result is its own setting's: full reads every row, streaming at 16 fewer than at 32.
  EXPECT_EQ(s["results"][0]["spec"], "full");
  EXPECT_EQ(s["results"][0]["rows_read_fraction"].get<double>(), 1.0);
  EXPECT_EQ(s["results"][1]["spec"], "streaming:budget=16");
  EXPECT_LT(s["results"][1]["rows_read_fraction"].get<double>(),
            s["results"][2]["rows_read_fraction"].get<double>());
  EXPECT_LT(s["results"][2]["rows_read_fraction"].get<double>(), 1.0);
  // Equal-resource fields: StreamingLLM evicts, so it holds less KV than full; bytes read grow
  // with the budget; partial credit and the 95 % CI sit beside each score.
  for (const auto& e : s["results"]) {
    EXPECT_GT(e["kv_resident_bytes"].get<double>(), 0.0) << e["spec"];
    EXPECT_GE(e["kv_resident_bytes_max"].get<double>(), e["kv_resident_bytes"].get<double>());
    EXPECT_EQ(e["partial"], e["score"]) << e["spec"];  // passkey: one answer, partial = score
    EXPECT_LE(e["score_ci95"][0].get<double>(), e["score"].get<double>());
    EXPECT_GE(e["score_ci95"][1].get<double>(), e["score"].get<double>());
    EXPECT_FALSE(e.contains("reference"));  // no oracle:gqa=per-head in this sweep
    EXPECT_GT(e["decode_ms_per_token"].get<double>(), 0.0) << e["spec"];  // time beside bytes
  }
  EXPECT_LT(s["results"][1]["kv_resident_bytes"].get<double>(),
            s["results"][2]["kv_resident_bytes"].get<double>());
  EXPECT_LT(s["results"][2]["kv_resident_bytes"].get<double>(),
            s["results"][0]["kv_resident_bytes"].get<double>());
  EXPECT_LT(s["results"][1]["kv_bytes_read_per_token"].get<double>(),
            s["results"][2]["kv_bytes_read_per_token"].get<double>());
  EXPECT_GT(s["items"][0]["kv_resident_bytes"].get<double>(), 0.0);
  EXPECT_TRUE(std::filesystem::exists(dir + "/score_vs_bytes.svg"));
  EXPECT_EQ(s["model_sha256"].get<std::string>().size(), 64u);
  EXPECT_TRUE(std::filesystem::exists(dir + "/results.md"));
  // results.md names the model by file name and sha256, never by its path; results.json keeps
  // the path.
  std::ifstream md_in(dir + "/results.md");
  const std::string md((std::istreambuf_iterator<char>(md_in)), std::istreambuf_iterator<char>());
  const std::string model_file = std::filesystem::path(path).filename().string();
  EXPECT_NE(md.find("model `" + model_file + "` (sha256 `" +
                    s["model_sha256"].get<std::string>().substr(0, 16) + "`)"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find(std::filesystem::path(path).parent_path().string()), std::string::npos) << md;
  EXPECT_EQ(s["model"], path);
  EXPECT_TRUE(std::filesystem::exists(dir + "/score_vs_budget.svg"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/score_vs_budget_passkey.svg"));
  EXPECT_NE(r.out.find("| streaming | 32 |"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoint.jsonl"));  // finished: removed
  EXPECT_EQ(s["resumed_tasks"].get<int>(), 0);
  // The release, and the commit the binary was built from when built in a git checkout.
  EXPECT_TRUE(std::regex_match(s["fasa_version"].get<std::string>(),
                               std::regex(R"(\d+\.\d+\.\d+( \([0-9a-f]{7,}(-dirty)?\))?)")))
      << s["fasa_version"];

  // An interrupted sweep: task 0 is in the checkpoint (marked), task 1 is not.
  SweepIdentity id;
  id.model_sha256 = s["model_sha256"].get<std::string>();
  id.tasks_sha256 = s["tasks_sha256"].get<std::string>();
  id.kv_type = "f16";
  id.n_tasks = 2;
  for (const auto& e : s["results"]) id.policies.push_back(e["spec"].get<std::string>());
  const std::vector<Task> task_list = load_tasks(tasks);
  {
    CheckpointFile ck(dir + "/checkpoint.jsonl", id, task_list, false);
    TaskDone d{0, task_list[0].id, 150, 0.5, {}, "0.5.0 (0000000)"};  // another build's task
    for (size_t p = 0; p < id.policies.size(); ++p) {
      TaskOutcome o;
      o.output = "from the checkpoint";
      o.score = 1.0;
      d.outcomes.push_back(o);
    }
    ck.append(d);
  }
  const std::vector<std::string> sweep = {"eval",    "sweep", "-m",         path,
                                          "--tasks", tasks,   "--policies", "full,streaming",
                                          "-o",      dir};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = sweep;
    v.insert(v.end(), extra.begin(), extra.end());
    return run_cli(v);
  };
  expect_clean_error(with({"--budgets", "16,32"}), "unfinished sweep: add --resume");
  expect_clean_error(with({"--budgets", "16", "--resume"}), "it was written for policies = ");
  expect_clean_error(with({"--budgets", "16,32", "--resume"}),
                     "task '" + task_list[0].id +
                         "' was run by fasa 0.5.0 (0000000), this is fasa " +
                         s["fasa_version"].get<std::string>() + "; resume with that build");
  r = with({"--budgets", "16,32", "--resume", "--resume-other-build"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming: 1 of 2 tasks already done"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoint.jsonl"));
  const auto resumed = nlohmann::json::parse(std::ifstream(dir + "/results.json"));
  EXPECT_EQ(resumed["resumed_tasks"].get<int>(), 1);
  EXPECT_EQ(resumed["task_builds"]["0.5.0 (0000000)"].get<int>(), 1);
  EXPECT_EQ(resumed["task_builds"][s["fasa_version"].get<std::string>()].get<int>(), 1);
  EXPECT_EQ(s["task_builds"].size(), 1u);  // a plain run: one build
  ASSERT_EQ(resumed["items"].size(), 6u);  // [task][policy]
  for (size_t k = 0; k < 6; ++k) {
    if (k < 3) {
      EXPECT_EQ(resumed["items"][k]["output"], "from the checkpoint");  // not run again
    } else {
      EXPECT_EQ(resumed["items"][k]["output"], s["items"][k]["output"]);  // run: the same
    }
  }
  EXPECT_NE(r.out.find("resumed: 1 of the 2 tasks came from the checkpoint"), std::string::npos);
  EXPECT_NE(r.out.find("**Builds mixed**"), std::string::npos) << r.out;
}

// `fasa serve` refuses bad settings before it listens: one clear error each, exit 1.
TEST(CliTest, ServeBadSettings) {
  const std::string m = tiny("tiny_serve.gguf", test::TinySpec{});
  expect_clean_error(test::run_cli({"serve", "-m", m, "--port", "70000"}), "--port");
  expect_clean_error(test::run_cli({"serve", "-m", m, "--parallel", "0"}), "--parallel");
  expect_clean_error(test::run_cli({"serve", "-m", m, "--max-tokens", "0"}), "--max-tokens");
  expect_clean_error(test::run_cli({"serve", "-m", m, "--max-conns", "-1"}), "--max-conns");
  expect_clean_error(test::run_cli({"serve", "-m", m, "--max-conns-per-client", "-2"}),
                     "--max-conns-per-client must be >= 0 (got -2)");
  expect_clean_error(test::run_cli({"serve", "-m", m, "--idle-timeout", "0"}),
                     "--idle-timeout must be a number of seconds in (0, 86400] (got 0)");
  expect_clean_error(test::run_cli({"serve", "-m", m, "--request-timeout", "-1"}),
                     "--request-timeout");
  expect_clean_error(test::run_cli({"serve", "-m", m, "--request-timeout", "nan"}),
                     "--request-timeout");
  for (const char* bad : {"-1", "nan", "90000"}) {
    expect_clean_error(test::run_cli({"serve", "-m", m, "--drain-timeout", bad}),
                       "--drain-timeout must be a number of seconds in [0, 86400]");
  }
  expect_clean_error(test::run_cli({"serve", "-m", m, "--cors-origin", "http://a.example/"}),
                     "--cors-origin 'http://a.example/' is not an origin");
  expect_clean_error(test::run_cli({"serve", "-m", m, "--cors-origin", "*", "--cors-origin",
                                    "http://b.example"}),
                     "--cors-origin '*' allows every origin: give it alone");
  expect_clean_error(test::run_cli({"serve", "-m", m}), "tokenizer");  // nothing to chat with
  expect_clean_error(test::run_cli({"serve", "-m", "/nonexistent.gguf"}), "nonexistent");
}

// `fasa run --chat` keeps "<|im_end|>" in the prompt as text (several tokens); --parse-special
// makes it the one special token. The stderr statistics name the prompt's length.
TEST(CliRealModel, RunChatParsesSpecialTextsOnlyWhenAsked) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto model = Model::load(path);
  const std::vector<ChatMessage> msgs = {{"user", "<|im_end|>"}};
  for (const bool opt_in : {false, true}) {
    std::vector<std::string> args = {"run",        "-m", path, "--chat", "-p",
                                     "<|im_end|>", "-n", "1",  "--temp", "0"};
    if (opt_in) args.push_back("--parse-special");
    const test::CliRun r = test::run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const size_t want = chat_prompt_tokens(*model, msgs, opt_in).size();
    EXPECT_NE(r.err.find(fmt::format("prompt {} tokens", want)), std::string::npos)
        << "opt-in " << opt_in << ", wanted " << want << " tokens: " << r.err;
  }
  EXPECT_GT(chat_prompt_tokens(*model, msgs, false).size(),
            chat_prompt_tokens(*model, msgs, true).size());
}

TEST(CliRealModel, ServeBadPolicyAndAddress) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  expect_clean_error(test::run_cli({"serve", "-m", path, "--policy", "nope"}),
                     "default policy: unknown attention policy 'nope'");
  expect_clean_error(test::run_cli({"serve", "-m", path, "--policy", "fasa"}), "default policy: ");
  expect_clean_error(test::run_cli({"serve", "-m", path, "--host", "10.255.255.1x"}),
                     "10.255.255.1x");
  expect_clean_error(test::run_cli({"serve", "-m", path, "--ctx", "999999"}),
                     "exceeds the model's trained context");
}

}  // namespace
}  // namespace fasa
