// `--kv-type q8_0` on the command line: accepted where --kv-type exists, a bad value is one
// clear error naming the three types, and `fasa bench --json` reports the type and its bytes.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

std::string tiny_hd32(const std::string& name) {
  test::TinySpec s;
  s.d_model = 128;  // head_dim 32
  s.byte_tokenizer = true;
  const std::string path = ::testing::TempDir() + "/" + name;
  test::write_tiny_model(path, s);
  return path;
}

void expect_kv_type_error(const test::CliRun& r, const std::string& cmd) {
  EXPECT_EQ(r.signal, 0) << cmd << " crashed: " << r.err;
  EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.err;
  EXPECT_NE(r.err.find("fasa: error: unknown KV cache type 'q4_0' (expected f16, f32 or q8_0)"),
            std::string::npos)
      << cmd << ": " << r.err;
}

TEST(CliKvType, BadValueIsOneClearErrorEverywhere) {
  const std::string m = tiny_hd32("cli_kvtype.gguf");
  const std::string text = ::testing::TempDir() + "/cli_kvtype.txt";
  std::ofstream(text) << std::string(400, 'a');
  expect_kv_type_error(test::run_cli({"run", "-m", m, "-p", "hi", "-n", "2", "--kv-type", "q4_0"}),
                       "run");
  expect_kv_type_error(test::run_cli({"bench", "-m", m, "-p", "8", "--kv-type", "q4_0"}), "bench");
  expect_kv_type_error(test::run_cli({"serve", "-m", m, "--kv-type", "q4_0"}), "serve");
  expect_kv_type_error(test::run_cli({"eval", "ppl", "-m", m, "--text", text, "--ctx", "64",
                                      "--kv-type", "q4_0"}),
                       "eval ppl");
}

TEST(CliKvType, Q8_0RunsAndBenchReportsItsBytes) {
  const std::string m = tiny_hd32("cli_kvtype_q8.gguf");
  const auto run = test::run_cli({"run", "-m", m, "-p", "hello", "-n", "3", "--kv-type", "q8_0"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  auto bench = [&](const std::string& type) {
    const auto r = test::run_cli({"bench", "-m", m, "-p", "0", "-n", "2", "-d", "8", "-r", "1",
                                  "--threads", "1", "--json", "--kv-type", type});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  };
  const nlohmann::json f16 = bench("f16"), q8 = bench("q8_0");
  EXPECT_EQ(q8["kv_type"], "q8_0");
  // 34 bytes per 32 values against 64: the same rows in 68 / 128 of the bytes.
  EXPECT_EQ(q8["kv_global_layers_bytes"].get<double>() * 128,
            f16["kv_global_layers_bytes"].get<double>() * 68);
  EXPECT_EQ(q8["kv_bytes_read_per_token"].get<double>() * 128,
            f16["kv_bytes_read_per_token"].get<double>() * 68);
}

}  // namespace
}  // namespace fasa
