// The `fasa` binary end to end: subcommands on tiny and real models, and every bad input ending
// in one clear error line, a non-zero exit and no crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fasa/io/gguf.h"
#include "support/cli_runner.h"
#include "support/model_path.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

using test::run_cli;

std::string temp_file(const std::string& name) { return ::testing::TempDir() + "/" + name; }

// Exit 1, no signal, stderr is one "fasa: error: ..." line mentioning `needle`.
void expect_clean_error(const test::CliRun& r, const std::string& needle) {
  EXPECT_EQ(r.signal, 0) << "crashed: " << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("fasa: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << r.err;
}

std::string tiny(const std::string& name, const test::TinySpec& spec) {
  const std::string path = temp_file(name);
  test::write_tiny_model(path, spec);
  return path;
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

TEST(CliTest, NoSubcommandOrBadFlags) {
  EXPECT_NE(run_cli({}).exit_code, 0);
  EXPECT_NE(run_cli({"frobnicate"}).exit_code, 0);
  const std::string path = tiny("cli_flags.gguf", {});
  EXPECT_NE(run_cli({"bench", "-m", path, "-p", "abc"}).exit_code, 0);
  expect_clean_error(run_cli({"bench", "-m", path, "-p", "0", "-n", "0"}), "nothing to measure");
  expect_clean_error(run_cli({"bench", "-m", path, "-d", "100000"}), "context length");
  expect_clean_error(run_cli({"bench", "-m", path, "-p", "8", "--policy", "bogus"}), "unknown attention policy");
  expect_clean_error(run_cli({"bench", "-m", path, "-p", "8", "--kv-type", "q3"}), "unknown KV cache type");
  expect_clean_error(run_cli({"bench", "-m", path, "--threads", "-3"}), "--threads");
}

TEST(CliTest, BenchTinyModelJson) {
  const std::string path = tiny("cli_bench.gguf", {});
  const auto r = run_cli({"bench", "-m", path, "-p", "16", "-n", "4", "-d", "0,8", "-r", "2",
                          "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 4u);  // pp16, tg4 at depths 0 and 8
  for (const auto& row : j["results"]) {
    EXPECT_GT(row["tokens_per_s"].get<double>(), 0.0);
    EXPECT_EQ(row["samples"].size(), 2u);
  }
  EXPECT_EQ(j["results"][2]["depth"], 8);
}

// Several policies in one bench run: one row per (test, policy), each with its KV accounting.
TEST(CliTest, BenchComparesPolicies) {
  const std::string path = tiny("cli_bench_compare.gguf", {});
  const auto r = run_cli({"bench", "-m", path, "-p", "0", "-n", "4", "-d", "12", "-r", "2",
                          "--policy", "full", "--compare", "oracle:budget=3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["policies"].size(), 2u);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["policy"], "full");
  EXPECT_EQ(j["results"][1]["policy"], "oracle:budget=3");
  for (const auto& row : j["results"]) {
    EXPECT_EQ(row["samples"].size(), 2u);
    EXPECT_GT(row["kv_resident_ram_bytes"].get<double>(), 0.0);
    EXPECT_EQ(row["kv_resident_file_bytes"].get<double>(), 0.0);
  }
  EXPECT_LT(j["results"][1]["kv_bytes_read_per_token"].get<double>(),
            j["results"][0]["kv_bytes_read_per_token"].get<double>());
}

// `--bandwidth` alone (-p 0 -n 0) prints only the probe's result.
TEST(CliTest, BenchBandwidthOnly) {
  const std::string path = tiny("cli_bench_bw.gguf", {});
  const auto r = run_cli({"bench", "-m", path, "--bandwidth", "--bandwidth-bytes", "67108864",
                          "-p", "0", "-n", "0", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("measuring read bandwidth"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["read_bandwidth_gb_s"].get<double>(), 0.0);
  EXPECT_GE(j["threads"].get<int>(), 1);
  EXPECT_EQ(j["bytes"].get<uint64_t>(), 67108864u);
  const auto text = run_cli({"bench", "-m", path, "--bandwidth", "--bandwidth-bytes", "67108864",
                             "-p", "0", "-n", "0"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("read bandwidth: "), std::string::npos) << text.out;
}

// With tests to run, `--bandwidth` adds the roofline to tg rows (and leaves pp rows alone).
TEST(CliTest, BenchBandwidthRoofline) {
  const std::string path = tiny("cli_bench_roofline.gguf", {});
  const auto r = run_cli({"bench", "-m", path, "-p", "0", "-n", "4", "-d", "8", "-r", "1",
                          "--bandwidth", "--bandwidth-bytes", "67108864", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["read_bandwidth_gb_s"].get<double>(), 0.0);
  ASSERT_EQ(j["results"].size(), 1u);
  for (const auto& row : j["results"]) {
    EXPECT_EQ(row["test"], "tg4");
    EXPECT_GT(row["bytes_per_token"].get<double>(), j["model_bytes"].get<double>());
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
  const auto pj = nlohmann::json::parse(plain.out);
  EXPECT_FALSE(pj.contains("read_bandwidth_gb_s"));
  EXPECT_FALSE(pj["results"][0].contains("roofline_fraction"));
}

TEST(CliTest, BenchBandwidthBadSize) {
  const std::string path = tiny("cli_bench_bw_bad.gguf", {});
  expect_clean_error(run_cli({"bench", "-m", path, "--bandwidth", "--bandwidth-bytes", "1000",
                              "-p", "0", "-n", "0"}),
                     "--bandwidth-bytes");
  expect_clean_error(run_cli({"bench", "-m", path, "--bandwidth", "--bandwidth-bytes", "-5",
                              "-n", "4"}),
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
}

// ---- real model -------------------------------------------------------------------------

TEST(CliRealModel, TokenizeAndPieces) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto r = run_cli({"tokenize", "-m", path, "-p", "Hello world", "--pieces"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "19556 905");
  EXPECT_NE(r.out.find("\t world"), std::string::npos) << r.out;
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
  const std::vector<std::string> args = {"run", "-m", path, "-p", "Once upon a time", "-n", "12",
                                         "--temp", "0.9", "--seed", "7", "-q"};
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

TEST(CliRealModel, EvalPplJsonAndShortText) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const std::string text = std::string(FASA_SOURCE_DIR) + "/../shared/data/texts/austen_emma.txt";
  const auto r = run_cli({"eval", "ppl", "-m", path, "--text", text, "--ctx", "64", "--chunks",
                          "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["n_chunks"], 2);
  EXPECT_EQ(j["n_scored"], 2 * 31);
  EXPECT_GT(j["ppl"].get<double>(), 1.0);
  EXPECT_LT(j["ppl"].get<double>(), 1000.0);
  EXPECT_GT(j["ppl_se"].get<double>(), 0.0);
  const std::string short_text = temp_file("short.txt");
  std::ofstream(short_text) << "Too short.";
  expect_clean_error(run_cli({"eval", "ppl", "-m", path, "--text", short_text, "--ctx", "512"}),
                     "fewer than one chunk");
  expect_clean_error(run_cli({"eval", "ppl", "-m", path, "--text", "/nonexistent.txt"}),
                     "cannot read");
}

}  // namespace
}  // namespace fasa
