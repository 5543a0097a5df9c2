// `--lossless` in `fasa run`, `fasa eval tasks` and `fasa bench`: the same text as `--policy
// full`, the decoder's statistics where each command reports, and one clear error for bad values.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/model_path.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

std::string temp_file(const std::string& name) { return ::testing::TempDir() + "/" + name; }

void expect_error_line(const test::CliRun& r, const std::string& needle) {
  EXPECT_EQ(r.signal, 0) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("fasa: error: " + needle), std::string::npos) << r.err;
}

TEST(LosslessCli, RunPrintsFullAttentionsText) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const std::string prompt =
      "It was a bright cold day in April, and the clocks were striking thirteen. Winston Smith, "
      "his chin nuzzled into his breast in an effort to escape the vile wind, slipped quickly";
  const auto full = test::run_cli({"run", "-m", path, "-p", prompt, "-n", "24", "--temp", "0"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  for (const char* k : {"2", "auto"}) {
    const auto r = test::run_cli({"run", "-m", path, "-p", prompt, "-n", "24", "--temp", "0",
                                  "--policy", "streaming", "--budget", "16", "--lossless", k});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, full.out) << "K=" << k;
    EXPECT_NE(r.err.find(std::string("fasa: lossless ") + k + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tokens per verification"), std::string::npos) << r.err;
  }
}

TEST(LosslessCli, BadValuesAreOneError) {
  const std::string model = temp_file("lossless_cli_tiny.gguf");
  test::TinySpec spec;
  spec.byte_tokenizer = true;
  test::write_tiny_model(model, spec);
  for (const char* bad : {"0.5", "15", "many", "-2"}) {
    expect_error_line(test::run_cli(
                          {"run", "-m", model, "-p", "hello", "-n", "4", "--lossless", bad}),
                      "--lossless takes off, auto or a number of drafts from 1 to 14");
  }
  expect_error_line(test::run_cli(
                        {"bench", "-m", model, "-p", "0", "-n", "4", "-d", "0", "--lossless", "2"}),
                    "--lossless generates from a prefilled context");
  expect_error_line(test::run_cli({"bench", "-m", model, "-p", "0", "-n", "4", "-d", "16",
                                   "--sequences", "2", "--lossless", "2"}),
                    "--lossless measures one sequence");
}

// bench: every row's tokens are full attention's (`same_tokens_as_full`), with the counts.
TEST(LosslessCli, BenchChecksTheTokensAgainstFull) {
  const std::string model = temp_file("lossless_cli_bench.gguf");
  test::TinySpec spec;
  spec.byte_tokenizer = true;  // generation needs a tokenizer
  test::write_tiny_model(model, spec);
  const auto r =
      test::run_cli({"bench", "-m", model, "-p", "0", "-n", "12", "-d", "40", "-r", "1", "--policy",
                     "full,streaming,oracle", "--budget", "8", "--lossless", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int rows = 0;
  size_t start = 0;
  while (start < r.out.size()) {
    const size_t end = r.out.find('\n', start);
    const auto j = nlohmann::json::parse(r.out.substr(start, end - start));
    start = end == std::string::npos ? r.out.size() : end + 1;
    ++rows;
    EXPECT_EQ(j["lossless"], "3");
    EXPECT_TRUE(j["same_tokens_as_full"].get<bool>()) << j.dump();
    if (j["policy"] == "full") {
      EXPECT_FALSE(j.contains("lossless_acceptance"));
    } else {
      EXPECT_GE(j["lossless_tokens_per_verification"].get<double>(), 1.0) << j.dump();
      EXPECT_GT(j["lossless_verifications"].get<int>(), 0);
    }
  }
  EXPECT_EQ(rows, 3);
}

// eval tasks: the scores of every lossless policy equal full attention's, item for item.
TEST(LosslessCli, EvalTasksScoresEqualFull) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  FASA_TEXT_OR_SKIP(hay, "austen_northanger_abbey.txt");
  const std::string tasks = temp_file("lossless_cli_tasks.jsonl");
  auto r = test::run_cli({"gen-tasks", "-m", path, "--kind", "passkey", "--haystack", hay, "--ctx",
                          "256", "--n", "2", "--seed", "5", "-o", tasks});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_cli({"eval", "tasks", "-m", path, "--tasks", tasks, "--policy", "full", "--compare",
                     "streaming:budget=16", "--compare", "h2o:budget=32", "--lossless", "4",
                     "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["lossless"], "4");
  ASSERT_EQ(j["results"].size(), 3u);
  const auto& items = j["items"];
  ASSERT_EQ(items.size(), 6u);
  for (size_t i = 0; i < items.size(); i += 3) {
    EXPECT_EQ(items[i + 1]["output"], items[i]["output"]);
    EXPECT_EQ(items[i + 2]["output"], items[i]["output"]);
  }
  EXPECT_TRUE(j["results"][1].contains("lossless"));
  EXPECT_GT(j["results"][1]["lossless"]["verifications"].get<int>(), 0);
}

}  // namespace
}  // namespace fasa
