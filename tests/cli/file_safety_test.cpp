// Files the CLI writes survive a kill, and files it reads are checked before any work:
// `fasa calibrate` killed mid-run keeps the previous calibration byte for byte, a killed
// `fasa eval sweep` resumes to the same results as an uninterrupted run, and bad inputs or
// outputs fail at once with one clear error and no file left behind.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/attention/calibration.h"
#include "support/cli_runner.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

namespace fs = std::filesystem;
using test::names_in;
using test::run_cli;
using test::slurp;

// A fresh, empty directory per test.
fs::path fresh_dir(const std::string& name) { return test::fresh_dir("cli_files_" + name); }

void expect_one_error_line(const test::CliRun& r, const std::string& needle) {
  EXPECT_EQ(r.signal, 0) << "crashed: " << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("fasa: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
  EXPECT_NE(r.err.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << r.err;
}

// A tiny random model that can encode text (one token per byte).
std::string tiny_with_tokenizer(const fs::path& dir) {
  test::TinySpec s;
  s.byte_tokenizer = true;
  const std::string path = (dir / "tiny_tok.gguf").string();
  test::write_tiny_model(path, s);
  return path;
}

// n_words lower-case pseudo-words, seeded.
std::string words(int n_words, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s;
  for (int i = 0; i < n_words; ++i) {
    const int len = 2 + static_cast<int>(rng() % 6);
    for (int c = 0; c < len; ++c) s += static_cast<char>('a' + rng() % 26);
    s += ' ';
  }
  return s;
}

TEST(CliFiles, CalibrateChecksInputsAndOutputBeforeAnyWork) {
  const fs::path d = fresh_dir("calib_inputs");
  const std::string model = tiny_with_tokenizer(d);
  const fs::path text = d / "text.txt";
  std::ofstream(text) << words(400, 1);
  const fs::path out_dir = d / "out";
  fs::create_directories(out_dir);
  const std::string out = (out_dir / "c.json").string();
  auto calibrate = [&](const std::string& text_path, const std::string& out_path) {
    return run_cli({"calibrate", "-m", model, "--text", text_path, "-o", out_path, "--tokens", "40",
                    "--steps", "2", "--samples", "1", "--k", "8"});
  };
  auto r = calibrate(text.string(), (d / "no_such_dir" / "c.json").string());
  expect_one_error_line(r, "directory '" + (d / "no_such_dir").string() + "' does not exist");
  EXPECT_EQ(r.err.find("calibrating"), std::string::npos);  // before the work started
  expect_one_error_line(calibrate(text.string(), out_dir.string()), "it is a directory");
  const fs::path latin1 = d / "latin1.txt";
  std::ofstream(latin1) << words(100, 2) << "caf\xe9 " << words(100, 3);
  r = calibrate(latin1.string(), out);
  expect_one_error_line(r, "calibration text '" + latin1.string() + "' is not valid UTF-8");
  EXPECT_EQ(r.err.find("calibrating"), std::string::npos);
  expect_one_error_line(calibrate((d / "missing.txt").string(), out), "cannot read");
  EXPECT_EQ(names_in(out_dir), std::vector<std::string>{});  // nothing left behind
  // And the same arguments with good inputs work.
  r = calibrate(text.string(), out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(names_in(out_dir), std::vector<std::string>{"c.json"});
  EXPECT_NO_THROW(load_calibration(out));
}

// `fasa calibrate -o GOOD` killed while it computes: GOOD is intact, byte for byte. The
// temporary file it was writing (hidden, ".c.json.fasa-tmp-PID-N") is removed by the next
// calibration to the same file.
TEST(CliFiles, KilledCalibrateKeepsThePreviousCalibration) {
  const fs::path d = fresh_dir("calib_kill");
  const std::string model = tiny_with_tokenizer(d);
  const fs::path text = d / "text.txt";
  std::ofstream(text) << words(400, 4);
  const fs::path out_dir = d / "out";
  fs::create_directories(out_dir);
  const std::string out = (out_dir / "c.json").string();
  const std::vector<std::string> small = {"calibrate",   "-m",      model, "--text",
                                          text.string(), "-o",      out,   "--tokens",
                                          "40",          "--steps", "2",   "--k",
                                          "8",           "-t",      "1",   "--samples"};
  auto args = [&](const std::string& samples) {
    std::vector<std::string> a = small;
    a.push_back(samples);
    return a;
  };
  auto r = run_cli(args("1"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string good = slurp(out);
  ASSERT_FALSE(good.empty());

  r = test::run_cli_and_kill(args("1000000"), [](const std::string& err) {
    return err.find("/1000000 samples, ") != std::string::npos;  // a line after 1 s
  });
  ASSERT_EQ(r.signal, SIGKILL) << "exit " << r.exit_code << ": " << r.err;
  EXPECT_EQ(slurp(out), good);  // intact
  const auto left = names_in(out_dir);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].rfind(".c.json.fasa-tmp-", 0), 0u) << left[0];  // hidden, not the target
  EXPECT_NO_THROW(load_calibration(out));

  r = run_cli(args("2"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(names_in(out_dir), std::vector<std::string>{"c.json"});
  EXPECT_EQ(load_calibration(out).n_samples, 2);
}

// Tasks whose prompts fill most of the tiny model's 256-token context.
std::string write_tasks(const fs::path& path, int n) {
  std::ofstream f(path);
  for (int i = 0; i < n; ++i) {
    nlohmann::ordered_json j;
    j["id"] = fmt::format("t{}", i);
    j["task"] = i % 2 ? "even" : "odd";
    j["prompt"] = words(25, 100 + i);
    j["answers"] = {std::string(1, static_cast<char>('a' + i % 26))};
    j["max_new_tokens"] = 6;
    j["metric"] = "contains";
    f << j.dump() << "\n";
  }
  return path.string();
}

// A sweep killed with SIGKILL once it has checkpointed a few tasks, then --resume: the same
// scores and outputs as a sweep that was never interrupted.
TEST(CliFiles, KilledSweepResumesToTheSameResults) {
  const fs::path d = fresh_dir("sweep_kill");
  const std::string model = tiny_with_tokenizer(d);
  const std::string tasks = write_tasks(d / "tasks.jsonl", 200);
  auto sweep = [&](const fs::path& out, bool resume) {
    std::vector<std::string> a = {"eval",      "sweep",     "-m",         model,
                                  "--tasks",   tasks,       "--policies", "full,streaming",
                                  "--budgets", "16",        "-t",         "1",
                                  "-o",        out.string()};
    if (resume) a.push_back("--resume");
    return a;
  };
  const fs::path whole = d / "whole", cut = d / "cut";
  auto r = run_cli(sweep(whole, false));
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const fs::path ckpt = cut / "checkpoint.jsonl";
  auto lines_in = [](const fs::path& p) {
    const std::string s = slurp(p);
    return std::count(s.begin(), s.end(), '\n');
  };
  r = test::run_cli_and_kill(sweep(cut, false),
                             [&](const std::string&) { return lines_in(ckpt) >= 4; });
  ASSERT_EQ(r.signal, SIGKILL) << "exit " << r.exit_code << ": " << r.err;
  ASSERT_TRUE(fs::exists(ckpt));
  EXPECT_FALSE(fs::exists(cut / "results.json"));
  expect_one_error_line(run_cli(sweep(cut, false)), "unfinished sweep: add --resume");
  r = run_cli(sweep(cut, true));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("fasa: resuming: "), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(ckpt));

  const auto a = nlohmann::json::parse(slurp(whole / "results.json"));
  const auto b = nlohmann::json::parse(slurp(cut / "results.json"));
  EXPECT_EQ(a["resumed_tasks"], 0);
  EXPECT_GE(b["resumed_tasks"].get<int>(), 3);
  EXPECT_LT(b["resumed_tasks"].get<int>(), 200);
  ASSERT_EQ(a["results"].size(), b["results"].size());
  for (size_t i = 0; i < a["results"].size(); ++i) {
    EXPECT_EQ(a["results"][i]["spec"], b["results"][i]["spec"]);
    EXPECT_EQ(a["results"][i]["score"], b["results"][i]["score"]);
    EXPECT_EQ(a["results"][i]["by_task"], b["results"][i]["by_task"]);
    EXPECT_EQ(a["results"][i]["partial"], b["results"][i]["partial"]);
    EXPECT_EQ(a["results"][i]["kv_resident_bytes"], b["results"][i]["kv_resident_bytes"]);
    EXPECT_EQ(a["results"][i]["kv_bytes_read_per_token"],
              b["results"][i]["kv_bytes_read_per_token"]);
  }
  ASSERT_EQ(a["items"].size(), 2u * 200);
  ASSERT_EQ(a["items"].size(), b["items"].size());
  for (size_t i = 0; i < a["items"].size(); ++i) {
    EXPECT_EQ(a["items"][i]["id"], b["items"][i]["id"]);
    EXPECT_EQ(a["items"][i]["output"], b["items"][i]["output"]);
    EXPECT_EQ(a["items"][i]["score"], b["items"][i]["score"]);
  }
  EXPECT_EQ(slurp(whole / "score_vs_budget.svg"), slurp(cut / "score_vs_budget.svg"));
  EXPECT_EQ(slurp(whole / "score_vs_bytes.svg"), slurp(cut / "score_vs_bytes.svg"));
  for (const fs::path& dir : {whole, cut}) {  // no temporary file left
    for (const std::string& name : names_in(dir)) EXPECT_NE(name[0], '.') << name;
  }
}

// Every file the CLI reads: a bad number is one error naming the file and the field, exit 1.
TEST(CliFiles, BadFieldsInTaskAndCheckpointFiles) {
  const fs::path d = fresh_dir("bad_fields");
  test::write_tiny_model((d / "tiny.gguf").string(), {});
  const std::string model = (d / "tiny.gguf").string();
  const fs::path tasks = d / "tasks.jsonl";
  std::ofstream(tasks)
      << R"({"id": "a", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 3e9, "metric": "exact"})"
      << "\n";
  expect_one_error_line(run_cli({"eval", "tasks", "-m", model, "--tasks", tasks.string()}),
                        tasks.string() +
                            ":1: field \"max_new_tokens\" must be an integer in [1, "
                            "1048576] (got 3000000000.0)");
  std::ofstream(tasks)
      << R"({"id": "a", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": "exact"})"
      << "\n";
  const fs::path out = d / "sweep";
  fs::create_directories(out);
  std::ofstream(out / "checkpoint.jsonl") << R"({"format": "fasa-sweep-checkpoint"})"
                                          << "\n";
  expect_one_error_line(run_cli({"eval", "sweep", "-m", model, "--tasks", tasks.string(),
                                 "--policies", "full", "-o", out.string(), "--resume"}),
                        (out / "checkpoint.jsonl").string() +
                            ": line 1: missing field \"version\"");
  // Outputs are checked before the work: gen-tasks into a missing directory.
  std::ofstream(d / "hay.txt") << words(300, 9);
  expect_one_error_line(run_cli({"gen-tasks", "-m", model, "--kind", "passkey", "--haystack",
                                 (d / "hay.txt").string(), "-o",
                                 (d / "nope" / "t.jsonl").string()}),
                        "directory '" + (d / "nope").string() + "' does not exist");
}

}  // namespace
}  // namespace fasa
