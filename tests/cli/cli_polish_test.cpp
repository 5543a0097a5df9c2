// The CLI's manners: llama.cpp's single-dash words (accepted as habits or refused with a useful
// suggestion, never split into one-letter flags), plausible "did you mean"s only, a short
// `run --help` with the policy table behind `fasa help policies`, bench's thread lists and its
// -b (llama-bench's batch size), --repeat-penalty, progress lines fit for a file or a terminal,
// every task kind in gen-tasks --help, and run's closing lines.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/attention/registry.h"
#include "fasa/eval/task_gen.h"
#include "fasa/model/model.h"
#include "support/cli_runner.h"
#include "support/tiny_calibration.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

using test::expect_clean_error;
using test::run_cli;

std::string tiny_text_model() {
  static const std::string path = [] {
    const std::string p = ::testing::TempDir() + "/cli_polish_tiny.gguf";
    test::TinySpec spec;
    spec.byte_tokenizer = true;
    test::write_tiny_model(p, spec);
    return p;
  }();
  return path;
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(CliPolish, SingleDashWordsAreHabitsOrErrorsNeverClusters) {
  const std::string m = tiny_text_model();
  const std::vector<std::string> run = {"run", "-m", m, "-p", "abc", "-n", "2", "--temp", "0"};
  const auto plain = run_cli(run);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  // -fa (bare, with a value, with '='): accepted with a note, the same text.
  for (const std::vector<std::string>& fa :
       {std::vector<std::string>{"-fa"}, {"-fa", "on"}, {"-fa=off"}, {"--flash-attn", "auto"}}) {
    const auto r = run_cli(with(run, fa));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(has(r.err, "fasa: note: --flash-attn ")) << r.err;
    EXPECT_EQ(r.out, plain.out);
  }
  // The GPU words: notes, the same text.
  const auto gpu = run_cli(with(run, {"-sm", "none", "-mg", "0", "-ts", "1,1", "-nkvo"}));
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
  for (const char* n :
       {"--split-mode none", "--main-gpu 0", "--tensor-split 1,1", "--no-kv-offload"}) {
    EXPECT_TRUE(has(gpu.err, std::string("fasa: note: ") + n + " ignored")) << gpu.err;
  }
  EXPECT_EQ(gpu.out, plain.out);
  // -ctk/-ctv: one KV type for both.
  const auto f32 = run_cli(with(run, {"-ctk", "f32", "-ctv", "f32", "-q"}));
  const auto f32_flag = run_cli(with(run, {"--kv-type", "f32", "-q"}));
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_EQ(f32.out, f32_flag.out);
  EXPECT_EQ(f32.err, f32_flag.err);
  expect_clean_error(run_cli(with(run, {"-ctk", "q8_0", "-ctv", "f16"})), "one type");
  // -hf: no help, no exit 0: what to use instead.
  for (const std::vector<std::string>& hf : {std::vector<std::string>{"run", "-hf", "org/repo"},
                                             {"run", "-m", m, "-hff", "x.gguf"},
                                             {"bench", "--hf-repo", "org/repo"}}) {
    const auto r = run_cli(hf);
    expect_clean_error(r, "fasa pull NAME");
    EXPECT_EQ(r.out, "");
  }
  // An unknown word is one unknown flag, not -t with "emp" or -x -y -z.
  const auto temp = run_cli(with(run, {"-temp", "0.5"}));
  expect_clean_error(temp, "unknown flag '-temp' for 'fasa run'; did you mean '--temp'?");
  EXPECT_TRUE(has(temp.err, "single-dash flags are one letter")) << temp.err;
  expect_clean_error(run_cli(with(run, {"-tb", "2"})), "unknown flag '-tb'");
  // A flag's value may look like a word: it is the value.
  const auto dash_prompt = run_cli({"tokenize", "-m", m, "-p", "-la la"});
  ASSERT_EQ(dash_prompt.exit_code, 0) << dash_prompt.err;
  EXPECT_EQ(dash_prompt.out, run_cli({"tokenize", "-m", m, "--prompt=-la la"}).out);
  const auto fx = run_cli({"tokenize", "-m", m, "-p", "a", "-fx"});  // not -f x: "cannot read 'x'"
  expect_clean_error(fx, "unknown flag '-fx' for 'fasa tokenize'");
  EXPECT_FALSE(has(fx.err, "cannot read")) << fx.err;
  const auto fa = run_cli({"tokenize", "-m", m, "-p", "a", "-fa"});  // not -f a
  ASSERT_EQ(fa.exit_code, 0) << fa.err;
  EXPECT_TRUE(has(fa.err, "--flash-attn on ignored")) << fa.err;
}

// "did you mean" only for a plausible flag: never a one-letter flag for another letter.
TEST(CliPolish, SuggestionsArePlausible) {
  const std::string m = tiny_text_model();
  for (const char* flag : {"-e", "-b", "-r", "-x", "-H"}) {  // (run -i is fasa chat)
    const auto r = run_cli({"run", "-m", m, "-p", "x", flag, "1"});
    expect_clean_error(r, std::string("unknown flag '") + flag + "'");
    EXPECT_FALSE(has(r.err, "did you mean")) << r.err;
  }
  for (const char* flag : {"-e", "-i", "-x"}) {
    const auto r = run_cli({"bench", "-m", m, flag, "1"});
    expect_clean_error(r, std::string("unknown flag '") + flag + "'");
    EXPECT_FALSE(has(r.err, "did you mean")) << r.err;
  }
  const std::vector<std::pair<std::string, std::string>> near = {{"--n-predic", "--n-predict"},
                                                                 {"--tmep", "--temp"},
                                                                 {"---temp", "--temp"},
                                                                 {"--polcy", "--policy"},
                                                                 {"--sedd", "--seed"},
                                                                 {"-top-k", "--top-k"}};
  for (const auto& [typed, meant] : near) {
    expect_clean_error(run_cli({"run", "-m", m, "-p", "x", typed, "1"}),
                       "did you mean '" + meant + "'?");
  }
  expect_clean_error(run_cli({"chta"}), "did you mean 'chat'?");
}

TEST(CliPolish, RunHelpIsShortAndPoliciesHaveATopic) {
  const auto help = run_cli({"run", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_LT(count_lines(help.out), 60) << help.out;
  EXPECT_TRUE(has(help.out, "fasa help policies")) << help.out;
  EXPECT_FALSE(has(help.out, "calib_window")) << help.out;
  const auto topics = run_cli({"help"});
  ASSERT_EQ(topics.exit_code, 0) << topics.err;
  EXPECT_TRUE(has(topics.out, "policies")) << topics.out;
  EXPECT_TRUE(has(topics.out, "chat")) << topics.out;
  const auto policies = run_cli({"help", "policies"});
  ASSERT_EQ(policies.exit_code, 0) << policies.err;
  for (const std::string& name : policy_names()) {
    if (name.find('+') != std::string::npos) continue;
    EXPECT_TRUE(has(policies.out, "\n" + name + ": ")) << name;
  }
  EXPECT_TRUE(has(policies.out, "calib_window=")) << policies.out;
  const auto run_topic = run_cli({"help", "run"});
  ASSERT_EQ(run_topic.exit_code, 0);
  EXPECT_EQ(run_topic.out, help.out);
  expect_clean_error(run_cli({"help", "nonsense"}), "unknown help topic 'nonsense'");
  const auto top = run_cli({"--help"});
  EXPECT_TRUE(has(top.out, "fasa help")) << top.out;
}

TEST(CliPolish, BenchTakesThreadListsAndLlamaBenchsBatchSize) {
  const std::string m = tiny_text_model();
  const std::vector<std::string> bench = {"bench", "-m", m, "-p", "16", "-n", "2", "-r", "1"};
  const auto r = run_cli(with(bench, {"-t", "1,2", "-o", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 4u);  // (pp16, tg2) at 1 thread, then at 2
  EXPECT_EQ(rows[0]["threads"], 1);
  EXPECT_EQ(rows[1]["threads"], 1);
  EXPECT_EQ(rows[2]["threads"], 2);
  EXPECT_EQ(rows[3]["test"], "tg2");
  const auto md = run_cli(with(bench, {"--threads", "2,1"}));
  ASSERT_EQ(md.exit_code, 0) << md.err;
  const size_t two = md.out.find(", 2 threads,"), one = md.out.find(", 1 threads,");
  ASSERT_NE(two, std::string::npos) << md.out;
  ASSERT_NE(one, std::string::npos) << md.out;
  EXPECT_LT(two, one);
  expect_clean_error(run_cli(with(bench, {"-t", "1,x"})), "--threads");
  // -b: the tokens per prefill forward pass, as llama-bench's: pp16 in chunks of 4 takes four
  // forward passes (more barriers between the threads per token) where the default takes one.
  const auto chunk4 = run_cli(with(bench, {"-b", "4", "-t", "2", "-o", "json"}));
  const auto chunk_default = run_cli(with(bench, {"-t", "2", "-o", "json"}));
  ASSERT_EQ(chunk4.exit_code, 0) << chunk4.err;
  ASSERT_EQ(chunk_default.exit_code, 0) << chunk_default.err;
  const auto c4 = nlohmann::json::parse(chunk4.out), cd = nlohmann::json::parse(chunk_default.out);
  EXPECT_EQ(c4[0]["prefill_chunk"], 4);
  EXPECT_FALSE(cd[0].contains("prefill_chunk"));
  EXPECT_GT(c4[0]["parallel_barriers_per_token"].get<double>(),
            2.0 * cd[0]["parallel_barriers_per_token"].get<double>());
  EXPECT_TRUE(has(run_cli(with(bench, {"--batch-size", "4"})).out, ", prefill chunk 4"));
  expect_clean_error(run_cli(with(bench, {"-b", "1,2"})), "--sequences 1,2");
  expect_clean_error(run_cli(with(bench, {"-b", "0"})), "-b/--batch-size");
}

TEST(CliPolish, RepeatPenaltyAsLlamaCpp) {
  const std::string m = tiny_text_model();
  const std::vector<std::string> run = {"run", "-m", m,        "-p", "abab",
                                        "-n",  "24", "--temp", "0",  "-q"};
  const auto plain = run_cli(run);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto penalized = run_cli(with(run, {"--repeat-penalty", "3"}));
  ASSERT_EQ(penalized.exit_code, 0) << penalized.err;
  EXPECT_NE(penalized.out, plain.out);
  // Off: a penalty of 1, or a window of 0 tokens.
  EXPECT_EQ(run_cli(with(run, {"--repeat-penalty", "1"})).out, plain.out);
  EXPECT_EQ(run_cli(with(run, {"--repeat-penalty", "3", "--repeat-last-n", "0"})).out, plain.out);
  // The window matters: 1 token differs from the whole context.
  EXPECT_NE(run_cli(with(run, {"--repeat-penalty", "3", "--repeat-last-n", "1"})).out,
            run_cli(with(run, {"--repeat-penalty", "3", "--repeat-last-n", "-1"})).out);
  expect_clean_error(run_cli(with(run, {"--repeat-penalty", "0"})), "--repeat-penalty");
  expect_clean_error(run_cli(with(run, {"--repeat-last-n", "-2"})), "--repeat-last-n");
  expect_clean_error(run_cli(with(run, {"--repeat-penalty", "1.1", "--lossless", "2"})),
                     "--lossless");
}

// A haystack of plain sentences for gen-tasks on the tiny byte-level model.
std::string haystack() {
  const std::string path = ::testing::TempDir() + "/cli_polish_haystack.txt";
  std::ofstream f(path);
  for (int i = 0; i < 400; ++i) f << "The river ran past mill number " << i << " at dawn. ";
  return path;
}

TEST(CliPolish, ProgressLinesFitAFileOrATerminal) {
  const std::string m = tiny_text_model();
  const std::string out = ::testing::TempDir() + "/cli_polish_tasks.jsonl";
  const std::vector<std::string> gen = {"gen-tasks",  "-m",       m,       "--kind", "passkey",
                                        "--haystack", haystack(), "--ctx", "600",    "--n",
                                        "3",          "-o",       out};
  const auto r = run_cli(gen);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;  // a file: whole lines
  EXPECT_TRUE(
      std::regex_search(r.err,
                        std::regex(R"(fasa: 3/3 tasks, [\d.]+/s, \d+s elapsed, ~0s left\n)")))
      << r.err;
  const auto cal = run_cli({"calibrate", "-m", m, "--text", haystack(), "-o",
                            ::testing::TempDir() + "/cli_polish_cal.json", "--tokens", "40",
                            "--samples", "2", "--steps", "3", "--k", "8"});
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  EXPECT_EQ(cal.err.find('\r'), std::string::npos) << cal.err;
  EXPECT_TRUE(has(cal.err, "fasa: 2/2 samples, ")) << cal.err;
  EXPECT_TRUE(has(cal.err, " compound sets, ")) << cal.err;
  // On a terminal (`script` gives one) the line is rewritten in place.
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no `script`";
  std::string cmd = std::string("script -qec '") + FASA_CLI_PATH;
  for (size_t i = 0; i < gen.size(); ++i) cmd += " " + gen[i];
  const std::string log = ::testing::TempDir() + "/cli_polish_tty.log";
  cmd += "' /dev/null > " + log + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(log);
  const std::string tty((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(tty, "\rfasa: 3/3 tasks, ")) << tty;
}

TEST(CliPolish, GenTasksHelpListsEveryKind) {
  const auto help = run_cli({"gen-tasks", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  ASSERT_GE(task_kinds().size(), 14u);
  for (const std::string& k : task_kinds()) {
    EXPECT_TRUE(std::regex_search(help.out, std::regex("[ :,]" + k + "(,|\\n)"))) << k;
  }
}

TEST(CliPolish, RunsClosingLinesSayWhatThePolicySaved) {
  const std::string m = tiny_text_model();
  const std::vector<std::string> run = {"run", "-m", m,        "-p", "abcdefghijklmnop",
                                        "-n",  "4",  "--temp", "0"};
  const auto full = run_cli(run);
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_TRUE(std::regex_search(
      full.err,
      std::regex(
          R"(\nfasa: summary: KV read: [\d.]+ \w+/token \(dense attention\); decoding [\d.]+ tokens/s\n$)")))
      << full.err;
  const auto streaming = run_cli(with(run, {"--policy", "streaming", "--budget", "4"}));
  ASSERT_EQ(streaming.exit_code, 0) << streaming.err;
  EXPECT_TRUE(std::regex_search(
      streaming.err,
      std::regex(
          R"(\nfasa: summary: KV read: [\d.]+% of dense attention \([\d.]+ \w+/token instead of [\d.]+ \w+/token\) with policy streaming; decoding [\d.]+ tokens/s\n$)")))
      << streaming.err;
  const std::string calib = test::calibrate_tiny(Model::load(m), "cli_polish_tiny_calib.json");
  const auto c = run_cli(with(run, {"--policy", "fasa", "--budget", "4", "--calib", calib}));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_TRUE(has(c.err, "with policy fasa;")) << c.err;
  EXPECT_TRUE(has(c.err, "\nfasa: FASA-C saves memory bandwidth (decode time), not RAM: "))
      << c.err;
  const auto mv = run_cli(with(run, {"--policy", "fasa", "--budget", "4", "--calib", calib,
                                     "--variant", "m", "--offload-dir", ::testing::TempDir()}));
  ASSERT_EQ(mv.exit_code, 0) << mv.err;
  EXPECT_TRUE(std::regex_search(
      mv.err,
      std::regex(
          R"(\nfasa: FASA-M saves RAM: [\d.]+ \w+ of KV in RAM instead of the whole cache's [\d.]+ \w+; )")))
      << mv.err;
}

}  // namespace
}  // namespace fasa
