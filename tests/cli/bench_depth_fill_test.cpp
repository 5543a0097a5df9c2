// `fasa bench --depth-fill synthetic`: rows at depth carry "depth_fill", the markdown header
// says so, bad values and prefill-aware policies are refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

std::string tiny_path() {
  const std::string path = ::testing::TempDir() + "/bench_depth_fill.gguf";
  test::write_tiny_model(path, {});
  return path;
}

void expect_error_line(const test::CliRun& r, const std::string& needle) {
  EXPECT_EQ(r.signal, 0) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("fasa: error: " + needle), std::string::npos) << r.err;
}

TEST(BenchDepthFill, SyntheticRows) {
  const std::string path = tiny_path();
  const auto r =
      test::run_cli({"bench", "-m", path, "-p", "8", "-n", "2", "-d", "0,40", "-r", "2", "--policy",
                     "full,oracle", "--budget", "8", "--depth-fill", "synthetic", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> rows;
  for (size_t at = 0, nl; at < r.out.size(); at = nl + 1) {
    nl = r.out.find('\n', at);
    rows.push_back(nlohmann::json::parse(r.out.substr(at, nl - at)));
  }
  ASSERT_EQ(rows.size(), 8u);  // 2 depths x (pp8, tg2) x 2 policies
  for (const auto& row : rows) {
    EXPECT_EQ(row["depth_fill"], "synthetic");
    EXPECT_GT(row["tokens_per_s"].get<double>(), 0.0);
  }
  const auto& tg_deep = rows[6];
  EXPECT_EQ(tg_deep["depth"], 40);
  EXPECT_EQ(tg_deep["test"], "tg2");
  // full reads every row of the 40 + 1, 40 + 2 token cache: 2 layers * 2 kv heads * K,V * 16 * 2 B.
  EXPECT_DOUBLE_EQ(tg_deep["dense_kv_bytes_read_per_token"].get<double>(), 41.5 * 256);
  const auto md = test::run_cli({"bench", "-m", path, "-p", "0", "-n", "2", "-d", "16", "-r", "1",
                                 "--depth-fill", "synthetic"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("depth fill synthetic (random K/V rows: speed only)"), std::string::npos)
      << md.out;
  const auto pre =
      test::run_cli({"bench", "-m", path, "-p", "0", "-n", "2", "-d", "16", "-r", "1", "--json"});
  ASSERT_EQ(pre.exit_code, 0) << pre.err;
  EXPECT_EQ(nlohmann::json::parse(pre.out)["depth_fill"], "prefill");
}

TEST(BenchDepthFill, BadValuesAreRefused) {
  const std::string path = tiny_path();
  expect_error_line(test::run_cli({"bench", "-m", path, "-p", "8", "--depth-fill", "random"}),
                    "--depth-fill 'random': expected prefill or synthetic");
  expect_error_line(test::run_cli({"bench", "-m", path, "-p", "8", "-n", "0", "-d", "16",
                                   "--policy", "snapkv", "--budget", "8", "--depth-fill",
                                   "synthetic"}),
                    "--depth-fill synthetic: policy 'snapkv:budget=8' learns from the prefill "
                    "queries");
}

// A cache the machine cannot hold is refused before any of it is filled: one clear error
// naming the memory, not an OOM kill.
TEST(BenchDepthFill, ACacheLargerThanTheMemoryIsRefusedUpFront) {
  const std::string path = tiny_path();
  const auto r = test::run_cli({"bench", "-m", path, "-p", "0", "-n", "2", "-d", "200", "-r", "1",
                                "--depth-fill", "synthetic", "--policy", "full"},
                               {{"FASA_MEMORY_AVAILABLE", "1000"}});
  test::expect_clean_error(r, "policy 'full': the KV cache needs");
  EXPECT_NE(r.err.find("(FASA_MEMORY_AVAILABLE)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fasa
