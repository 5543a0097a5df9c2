// `fasa run --prompt-cache FILE`: the first run writes FILE, a second run of the same prompt
// takes every prompt token from it and prints the same text, another prompt overwrites it, and a
// file that is no prompt cache is one clear error.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/cli_runner.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

std::string temp_file(const std::string& name) { return ::testing::TempDir() + "/" + name; }

TEST(PromptCacheCli, SavesReusesOverwritesAndRefusesBadFiles) {
  const std::string model = temp_file("prompt_cache_cli_tiny.gguf");
  test::TinySpec spec;
  spec.byte_tokenizer = true;
  test::write_tiny_model(model, spec);
  const std::string file = temp_file("prompt_cache_cli.fasakv");
  std::remove(file.c_str());
  const std::string prompt = "The keeper wrote down every ship that passed the point.";
  auto run = [&](const std::string& p) {
    return test::run_cli(
        {"run", "-m", model, "-p", p, "-n", "8", "--temp", "0", "--prompt-cache", file});
  };
  const auto first = run(prompt);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string n = std::to_string(prompt.size());  // one token per byte
  EXPECT_NE(first.err.find(": 0 of " + n + " prompt tokens reused"), std::string::npos)
      << first.err;
  const auto again = run(prompt);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, first.out);
  EXPECT_NE(again.err.find(": " + n + " of " + n + " prompt tokens reused"), std::string::npos)
      << again.err;
  const auto plain = test::run_cli({"run", "-m", model, "-p", prompt, "-n", "8", "--temp", "0"});
  EXPECT_EQ(again.out, plain.out);
  const std::string other = "Another prompt entirely.";
  ASSERT_EQ(run(other).exit_code, 0);
  const auto third = run(other);  // the file now holds the other prompt
  EXPECT_NE(third.err.find(": " + std::to_string(other.size()) + " of "), std::string::npos)
      << third.err;
  std::ofstream(file, std::ios::binary) << "not a prompt cache";
  const auto bad = run(prompt);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.signal, 0);
  EXPECT_NE(bad.err.find("fasa: error: " + file + " is not a fasa prompt cache"), std::string::npos)
      << bad.err;
}

// A file of another model or KV type is an error whatever this run's context, and is left as
// it was (a run whose context is smaller than the file's tokens used to overwrite it).
TEST(PromptCacheCli, AFileOfAnotherModelOrKvTypeIsRefusedBeforeTheContextCheck) {
  test::TinySpec spec;
  spec.byte_tokenizer = true;
  const std::string model = temp_file("prompt_cache_cli_a.gguf");
  test::write_tiny_model(model, spec);
  spec.seed += 1;
  const std::string other_model = temp_file("prompt_cache_cli_b.gguf");
  test::write_tiny_model(other_model, spec);
  const std::string file = temp_file("prompt_cache_cli_other.fasakv");
  std::remove(file.c_str());
  const std::string prompt(60, 'w');
  const auto made = test::run_cli(
      {"run", "-m", model, "-p", prompt, "-n", "2", "--temp", "0", "--prompt-cache", file});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string before = test::slurp(file);
  // -c 16: fewer than the file's 60 tokens, the case that skipped the checks.
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"-m", other_model}, {"-m", model, "--kv-type", "f32"}}) {
    std::vector<std::string> args = {"run",    "-p", "short",          "-n", "2", "-c", "16",
                                     "--temp", "0",  "--prompt-cache", file};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(r.err.find("another model") != std::string::npos ||
                r.err.find("another KV type") != std::string::npos)
        << r.err;
    EXPECT_EQ(test::slurp(file), before);
  }
}

}  // namespace
}  // namespace fasa
