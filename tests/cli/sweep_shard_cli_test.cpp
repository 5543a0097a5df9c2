// `fasa eval sweep --shard I/N` and `fasa eval merge`: three shards, one of them killed with
// SIGKILL mid-run and resumed, merge into the single-machine sweep's results.json, results.md and
// plots (all but the fields that describe the run); bad shards and flags are one clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

namespace fs = std::filesystem;
using test::expect_clean_error;
using test::fresh_dir;
using test::names_in;
using test::run_cli;
using test::slurp;

// Tasks of two kinds whose prompts fill much of the tiny model's context.
std::string write_tasks(const fs::path& path, int n) {
  std::ofstream f(path);
  for (int i = 0; i < n; ++i) {
    nlohmann::ordered_json j;
    j["id"] = "t" + std::to_string(i);
    j["task"] = i % 3 ? "recall" : "count";
    std::string prompt;
    for (int w = 0; w < 30; ++w) prompt += "word" + std::to_string((w * 7 + i * 13) % 23) + " ";
    j["prompt"] = prompt;
    j["answers"] = {std::string(1, static_cast<char>('a' + i % 26))};
    j["max_new_tokens"] = 6;
    j["metric"] = "contains";
    f << j.dump() << "\n";
  }
  return path.string();
}

// results.json without the fields that describe the run rather than its results.
nlohmann::json results_of(const fs::path& dir) {
  nlohmann::json j = nlohmann::json::parse(slurp(dir / "results.json"));
  for (const char* k :
       {"date", "seconds", "prefill_seconds", "prefills", "threads", "resumed_tasks", "shards"}) {
    j.erase(k);
  }
  for (auto& e : j["results"]) e.erase("decode_ms_per_token");  // timing
  return j;
}

// results.md after its first paragraph (which gives the run's seconds), the ms/token column's
// cells (timing) blanked.
std::string table_of(const fs::path& dir) {
  const std::string md = slurp(dir / "results.md");
  const size_t at = md.find("\n\n", md.find("\n\n") + 2);
  std::istringstream in(at == std::string::npos ? md : md.substr(at));
  std::string out, line;
  int col = -1;  // the ms/token cell's index in a row split at '|'
  while (std::getline(in, line)) {
    if (line.rfind('|', 0) != 0) col = -1;  // a table ended
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string c; std::getline(row, c, '|');) cells.push_back(c);
    for (size_t i = 0; i < cells.size(); ++i) {
      if (cells[i] == " ms/token ") col = static_cast<int>(i);
    }
    if (line.rfind("| ", 0) == 0 && col >= 0 && static_cast<int>(cells.size()) > col) {
      cells[col] = " - ";
      line.clear();
      for (const std::string& c : cells) line += c + "|";
    }
    out += line + "\n";
  }
  return out;
}

TEST(CliShards, KilledShardResumesAndTheMergeIsTheWholeSweep) {
  const fs::path d = fresh_dir("sweep_shards");
  test::TinySpec spec;
  spec.byte_tokenizer = true;
  const std::string model = (d / "tiny.gguf").string();
  test::write_tiny_model(model, spec);
  const std::string tasks = write_tasks(d / "tasks.jsonl", 12);
  auto sweep = [&](const fs::path& out, const std::vector<std::string>& more) {
    std::vector<std::string> a = {"eval",      "sweep",     "-m",         model,
                                  "--tasks",   tasks,       "--policies", "full,streaming,h2o",
                                  "--budgets", "16,32",     "-t",         "1",
                                  "-o",        out.string()};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const fs::path whole = d / "whole";
  auto r = run_cli(sweep(whole, {}));
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const fs::path s0 = d / "s0", s1 = d / "s1", s2 = d / "s2";
  for (const auto& [dir, shard] : {std::pair{s0, "0/3"}, std::pair{s2, "2/3"}}) {
    r = run_cli(sweep(dir, {"--shard", shard}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("4 tasks done (0 from the checkpoint)"), std::string::npos) << r.out;
    EXPECT_EQ(names_in(dir), (std::vector<std::string>{"checkpoint.jsonl", "shard.json"}));
  }
  // Shard 1 killed once it has checkpointed a task (header + 1 line), then resumed.
  const fs::path ckpt = s1 / "checkpoint.jsonl";
  r = test::run_cli_and_kill(sweep(s1, {"--shard", "1/3"}), [&](const std::string&) {
    const std::string s = slurp(ckpt);
    return std::count(s.begin(), s.end(), '\n') >= 2;
  });
  ASSERT_EQ(r.signal, SIGKILL) << "exit " << r.exit_code << ": " << r.err;
  EXPECT_FALSE(fs::exists(s1 / "shard.json"));
  expect_clean_error(run_cli({"eval", "merge", s0.string(), s1.string(), s2.string(), "-o",
                              (d / "early").string()}),
                     "shard.json' is missing: " + s1.string() + " is not a finished shard");
  expect_clean_error(run_cli(sweep(s1, {"--shard", "1/3"})), "unfinished sweep: add --resume");
  expect_clean_error(run_cli(sweep(s1, {"--shard", "2/3", "--resume"})),
                     "this sweep has shard = [2,3]");
  expect_clean_error(run_cli(sweep(s1, {"--resume"})), "it was written for a shard");
  r = run_cli(sweep(s1, {"--shard", "1/3", "--resume"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rec = nlohmann::json::parse(slurp(s1 / "shard.json"));
  EXPECT_GE(rec["resumed_tasks"].get<int>(), 1);
  EXPECT_LT(rec["resumed_tasks"].get<int>(), 4);
  EXPECT_EQ(rec["shard"], nlohmann::json::array({1, 3}));

  const fs::path merged = d / "merged";
  r = run_cli({"eval", "merge", s2.string(), s0.string(), s1.string(), "-o", merged.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("merged 3 shards"), std::string::npos) << r.out;
  EXPECT_EQ(names_in(merged), names_in(whole));
  EXPECT_EQ(results_of(merged), results_of(whole));
  EXPECT_EQ(table_of(merged), table_of(whole));
  for (const std::string& name : names_in(whole)) {
    if (name.size() > 4 && name.substr(name.size() - 4) == ".svg") {
      EXPECT_EQ(slurp(merged / name), slurp(whole / name)) << name;
    }
  }
  const auto m = nlohmann::json::parse(slurp(merged / "results.json"));
  EXPECT_EQ(m["shards"], 3);
  EXPECT_EQ(m["resumed_tasks"], rec["resumed_tasks"]);
  EXPECT_EQ(m["tasks_file"], tasks);
  EXPECT_EQ(results_of(merged)["items"].size(), 12u * 5);  // every task × setting

  // A finished shard is not run again over itself; --resume just records it again.
  expect_clean_error(run_cli(sweep(s0, {"--shard", "0/3"})), "holds a finished shard");
  r = run_cli(sweep(s0, {"--shard", "0/3", "--resume"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("4 tasks done (4 from the checkpoint)"), std::string::npos) << r.out;

  // Bad merges: a shard missing or given twice, another sweep's shard, another task file, no
  // shard at all.
  const std::string out = (d / "bad").string();
  expect_clean_error(run_cli({"eval", "merge", s0.string(), s2.string(), "-o", out}),
                     "shard 1/3 is missing");
  expect_clean_error(run_cli({"eval", "merge", s0.string(), s1.string(), s1.string(), s2.string(),
                              "-o", out}),
                     "shard 1/3 is given twice");
  const fs::path other = d / "other";
  r = run_cli({"eval", "sweep", "-m", model, "--tasks", tasks, "--policies", "full", "-t", "1",
               "-o", other.string(), "--shard", "1/3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_clean_error(run_cli(
                         {"eval", "merge", s0.string(), other.string(), s2.string(), "-o", out}),
                     "has settings = full, but shard 0/3 (" + s0.string() + ") has full,streaming");
  const std::string tasks2 = write_tasks(d / "tasks2.jsonl", 13);
  expect_clean_error(run_cli({"eval", "merge", s0.string(), s1.string(), s2.string(), "-o", out,
                              "--tasks", tasks2}),
                     "the task file is not the shards'");
  expect_clean_error(run_cli({"eval", "merge", whole.string(), "-o", out}),
                     "shard.json' is missing");
  expect_clean_error(run_cli({"eval", "merge", (d / "nowhere").string(), "-o", out}),
                     "is not a directory");
  EXPECT_FALSE(fs::exists(out));
  // Bad --shard values.
  for (const char* bad : {"3/3", "1", "a/3", "-1/3", "0/0"}) {
    expect_clean_error(run_cli(sweep(d / "never", {"--shard", bad})),
                       std::string("--shard '") + bad + "': expected I/N");
  }
  // A whole sweep's checkpoint is not resumed as a shard.
  const fs::path cut = d / "cut";
  fs::create_directories(cut);
  r = test::run_cli_and_kill(sweep(cut, {}), [&](const std::string&) {
    const std::string s = slurp(cut / "checkpoint.jsonl");
    return std::count(s.begin(), s.end(), '\n') >= 2;
  });
  ASSERT_EQ(r.signal, SIGKILL) << "exit " << r.exit_code << ": " << r.err;
  expect_clean_error(run_cli(sweep(cut, {"--shard", "0/3", "--resume"})),
                     "it was written for a whole sweep (no --shard)");
}

}  // namespace
}  // namespace fasa
