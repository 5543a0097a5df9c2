// llama.cpp's CLI habits (issue 24): every parse error one `fasa: error:` line and exit 1 with a
// "did you mean", GPU-only flags accepted with a note, -c/--ctx-size, a random printed seed, the
// context sized from the prompt, prefill progress on a terminal only, `bench -o`.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/model_path.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

using test::run_cli;

std::string tiny_model() {
  static const std::string path = [] {
    const std::string p = ::testing::TempDir() + "/cli_habits_tiny.gguf";
    test::write_tiny_model(p, {});
    return p;
  }();
  return path;
}

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Exit 1, no signal, stderr exactly one "fasa: error: ..." line holding every needle.
void expect_one_line_error(const test::CliRun& r, const std::vector<std::string>& needles,
                           const std::string& absent = "") {
  EXPECT_EQ(r.signal, 0) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("fasa: error: ", 0), 0u) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  for (const std::string& n : needles) {
    EXPECT_NE(r.err.find(n), std::string::npos) << "wanted '" << n << "' in: " << r.err;
  }
  if (!absent.empty()) {
    EXPECT_EQ(r.err.find(absent), std::string::npos) << r.err;
  }
}

TEST(CliHabits, ParseErrorsAreOneLineWithASuggestion) {
  const std::string m = tiny_model();
  expect_one_line_error(run_cli({}), {"subcommand"});
  expect_one_line_error(run_cli({"rnu"}), {"unknown command 'rnu'", "did you mean 'run'?"});
  expect_one_line_error(run_cli({"eval", "swep"}),
                        {"unknown command 'eval swep'", "did you mean 'sweep'?"});
  expect_one_line_error(run_cli({"bench", "-m", m, "--tmep", "1"}),
                        {"unknown flag '--tmep' for 'fasa bench'"}, "did you mean");
  expect_one_line_error(run_cli({"run", "-m", m, "-p", "x", "--tmep", "1"}),
                        {"unknown flag '--tmep' for 'fasa run'", "did you mean '--temp'?"});
  expect_one_line_error(run_cli({"bench", "-m", m, "--deph", "8"}), {"did you mean '--depth'?"});
  expect_one_line_error(run_cli({"run", "-m", m, "-p", "x", "--zzzzzzzz"}),
                        {"unknown flag '--zzzzzzzz'"}, "did you mean");
  expect_one_line_error(run_cli({"run", "-p", "x"}), {"--model"});             // required
  expect_one_line_error(run_cli({"bench", "-m", m, "-r", "many"}), {"many"});  // bad value
  expect_one_line_error(run_cli({"bench", "-m", m, "-p"}), {"-p"});            // no value
  expect_one_line_error(run_cli({"zzzzzzzzzz"}), {"unknown command 'zzzzzzzzzz'"}, "did you");
  // --help still prints and exits 0, and shows the llama.cpp spellings.
  const auto help = run_cli({"run", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("--ctx-size"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--n-gpu-layers"), std::string::npos) << help.out;
}

TEST(CliHabits, GpuFlagsAreAcceptedWithANote) {
  const std::string m = tiny_model();
  for (const std::vector<std::string>& gpu : {std::vector<std::string>{"-ngl", "99"},
                                              {"--n-gpu-layers", "99"},
                                              {"-ngl=99"},
                                              {"--gpu-layers", "99"}}) {
    std::vector<std::string> args = {"bench", "-m", m, "-p", "8", "-n", "0", "-r", "1", "--json"};
    args.insert(args.end(), gpu.begin(), gpu.end());
    const auto r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("fasa: note: --n-gpu-layers 99 ignored: fasa runs on the CPU"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(lines(r.out), 1) << r.out;  // the bench ran
  }
}

TEST(CliHabits, BenchOutputFormats) {
  const std::string m = tiny_model();
  const std::vector<std::string> base = {"bench", "-m", m, "-p", "8", "-n", "2", "-r", "1"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return run_cli(a);
  };
  const auto jsonl = with({"-o", "jsonl"});
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  EXPECT_EQ(lines(jsonl.out), 2) << jsonl.out;  // pp8 and tg2
  const auto json = with({"-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto arr = nlohmann::json::parse(json.out);
  ASSERT_TRUE(arr.is_array());
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_EQ(arr[0]["test"], "pp8");
  EXPECT_EQ(arr[1]["test"], "tg2");
  EXPECT_TRUE(arr[1].contains("kv_bytes_read_per_token"));

  const auto csv = with({"-o", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::vector<std::string> rows;
  size_t start = 0;
  for (size_t nl; (nl = csv.out.find('\n', start)) != std::string::npos; start = nl + 1) {
    rows.push_back(csv.out.substr(start, nl - start));
  }
  ASSERT_EQ(rows.size(), 3u) << csv.out;  // header + 2 rows
  auto fields = [](const std::string& line) {
    std::vector<std::string> f(1);
    bool quoted = false;
    for (char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        f.emplace_back();
      } else {
        f.back() += c;
      }
    }
    return f;
  };
  const auto head = fields(rows[0]);
  for (const std::string& r : {rows[1], rows[2]}) EXPECT_EQ(fields(r).size(), head.size()) << r;
  // The union of both rows' keys: tg2's KV columns, empty in pp8's row.
  const auto col = [&](const std::string& name) {
    for (size_t i = 0; i < head.size(); ++i) {
      if (head[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  ASSERT_GE(col("tokens_per_s"), 0) << rows[0];
  ASSERT_GE(col("kv_bytes_read_per_token"), 0) << rows[0];
  EXPECT_EQ(fields(rows[1])[col("test")], "pp8");
  EXPECT_EQ(fields(rows[1])[col("kv_bytes_read_per_token")], "");
  EXPECT_GT(std::stod(fields(rows[2])[col("kv_bytes_read_per_token")]), 0.0);
  EXPECT_GT(std::stod(fields(rows[2])[col("tokens_per_s")]), 0.0);

  expect_one_line_error(with({"-o", "xml"}), {"'xml'", "md, jsonl, json or csv"});
  expect_one_line_error(with({"--json", "-o", "csv"}), {"--json", "csv"});
}

TEST(CliHabitsRealModel, CtxSizeAndTheDefaultContext) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto r = run_cli({"run", "-m", path, "-p", "The sky is", "-n", "5", "--temp", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch mt;
  ASSERT_TRUE(std::regex_search(r.err, mt, std::regex(R"(prompt (\d+) tokens)"))) << r.err;
  const int n_prompt = std::stoi(mt[1]);
  EXPECT_NE(r.err.find("context " + std::to_string(n_prompt + 5) + ";"), std::string::npos)
      << r.err;
  const auto c =
      run_cli({"run", "-m", path, "-p", "The sky is", "-n", "5", "--temp", "0", "-c", "96"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.err.find("context 96;"), std::string::npos) << c.err;
  EXPECT_EQ(c.out, r.out);  // the same greedy text whatever the context
  // -n -1 (until EOS): room for 4096 new tokens; a stop string (the greedy text's start)
  // ends it at once.
  ASSERT_GE(r.out.size(), 3u) << r.out;
  const auto until_eos = run_cli({"run", "-m", path, "-p", "The sky is", "-n", "-1", "--temp", "0",
                                  "--stop", r.out.substr(0, 3)});
  ASSERT_EQ(until_eos.exit_code, 0) << until_eos.err;
  EXPECT_NE(until_eos.err.find("context " + std::to_string(n_prompt + 4096) + ";"),
            std::string::npos)
      << until_eos.err;
  expect_one_line_error(run_cli({"run", "-m", path, "-p", "The sky is blue and the grass",
                                 "--ctx-size", "4"}),
                        {"longer than the context of 4 tokens"});
  // Without -c, a prompt the model's context cannot hold is refused before any prefill.
  const std::string too_long = ::testing::TempDir() + "/cli_habits_too_long.txt";
  {
    std::ofstream f(too_long);
    for (int i = 0; i < 1200; ++i) f << "The river ran past the old mill " << i << ". ";
  }
  expect_one_line_error(run_cli({"run", "-m", path, "-f", too_long, "-n", "4"}),
                        {"longer than the model's context of 8192 tokens"});
}

TEST(CliHabitsRealModel, TheDefaultSeedIsRandomAndPrinted) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const std::vector<std::string> args = {"run", "-m", path,     "-p", "Once upon a time",
                                         "-n",  "12", "--temp", "1.0"};
  const std::regex seed_re(R"(fasa: seed (\d+) \(random)");
  std::vector<std::string> seeds, texts;
  for (int i = 0; i < 2; ++i) {
    const auto r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::smatch mt;
    ASSERT_TRUE(std::regex_search(r.err, mt, seed_re)) << r.err;
    seeds.push_back(mt[1]);
    texts.push_back(r.out);
  }
  EXPECT_NE(seeds[0], seeds[1]);
  // The printed seed repeats the run.
  std::vector<std::string> again = args;
  again.insert(again.end(), {"--seed", seeds[0]});
  const auto r = run_cli(again);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, texts[0]);
  EXPECT_NE(r.err.find("fasa: seed " + seeds[0] + "\n"), std::string::npos) << r.err;
  expect_one_line_error(run_cli({"run", "-m", path, "-p", "x", "--seed", "-2"}), {"--seed"});
}

// Progress from about a second in, on a terminal only: `script` gives the run a pseudo-terminal.
TEST(CliHabitsRealModel, PrefillProgressOnATerminalOnly) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const std::string prompt = ::testing::TempDir() + "/cli_habits_long.txt";
  {
    std::ofstream f(prompt);
    for (int i = 0; i < 250; ++i) f << "The river ran past the old mill " << i << ". ";
  }
  const auto piped = run_cli({"run", "-m", path, "-f", prompt, "-n", "1", "-t", "1"});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("prefill "), std::string::npos) << piped.err;  // not a terminal
  std::smatch mt;
  ASSERT_TRUE(
      std::regex_search(piped.err, mt, std::regex(R"(prompt (\d+) tokens in ([\d.]+) ms)")));
  ASSERT_GT(std::stod(mt[2]), 1500.0) << "the prefill must outlast the 1 s delay: " << piped.err;

  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no `script`";
  const std::string log = ::testing::TempDir() + "/cli_habits_tty.log";
  const std::string cmd = std::string("script -qec '") + FASA_CLI_PATH + " run -m " + path +
                          " -f " + prompt + " -n 1 -t 1' /dev/null > " + log + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(log);
  const std::string tty((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(tty.find("fasa: prefill "), std::string::npos) << tty;
}

}  // namespace
}  // namespace fasa
