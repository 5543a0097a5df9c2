// eval/sweep_run.h from the library (what `fasa eval sweep` and `eval merge` call): the files a
// whole sweep and a shard leave, the events in order, a finished shard refused without resume,
// and the merge of the shards giving the whole sweep's table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/eval/sweep_run.h"
#include "support/expect_error.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

namespace fs = std::filesystem;

// A byte-tokenizer model and a task file of 3 tasks.
struct Inputs {
  std::string model, tasks;
};
Inputs inputs(const fs::path& dir) {
  Inputs in{(dir / "m.gguf").string(), (dir / "tasks.jsonl").string()};
  test::TinySpec spec;
  spec.byte_tokenizer = true;
  test::write_tiny_model(in.model, spec);
  std::FILE* f = std::fopen(in.tasks.c_str(), "w");
  for (const char* id : {"a", "b", "c"}) {
    std::fprintf(f,
                 "{\"id\": \"%s\", \"task\": \"echo\", \"metric\": \"contains\", \"answers\": "
                 "[\"xy\"], \"max_new_tokens\": 3, \"prompt\": \"say xy %s\"}\n",
                 id, id);
  }
  std::fclose(f);
  return in;
}

SweepSettings settings(const Inputs& in, const fs::path& out) {
  SweepSettings s;
  s.tasks_file = in.tasks;
  s.policies = {"full", "streaming"};
  s.budgets = {"8"};
  s.out_dir = out.string();
  s.version = "test build";
  s.kernels = "test kernels";
  return s;
}

TEST(SweepRun, WholeSweepWritesTheReportsAndRemovesItsCheckpoint) {
  const fs::path dir = test::fresh_dir("sweep_run_whole");
  const Inputs in = inputs(dir);
  std::vector<std::string> events;
  SweepEvents ev;
  ev.calibration = [&](const std::string& c) { events.push_back("calibration " + c); };
  ev.started = [&](const SweepStart& st) {
    events.push_back("started " + std::to_string(st.n_settings) + " " + std::to_string(st.n_tasks) +
                     " " + std::to_string(st.n_mine) + " " + std::to_string(st.n_done));
    EXPECT_EQ(st.checkpoint, (dir / "out" / "checkpoint.jsonl").string());
  };
  int last_done = 0;
  ev.progress = [&](int done, int total) {
    last_done = done;
    EXPECT_EQ(total, 6);
  };
  int loads = 0;
  const SweepReports r = run_sweep(
      settings(in, dir / "out"),
      [&] {
        ++loads;
        return Model::load(in.model);
      },
      ev);
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(events, std::vector<std::string>{"started 2 3 3 0"});  // no policy takes a calib
  EXPECT_EQ(last_done, 6);
  EXPECT_EQ(r.n_mine, 3u);
  EXPECT_EQ(r.n_known, 0);
  EXPECT_NE(r.markdown.find("| streaming | 8 |"), std::string::npos) << r.markdown;
  EXPECT_EQ(test::slurp(dir / "out" / "results.md"), r.markdown);
  const std::vector<std::string> names = test::names_in(dir / "out");
  EXPECT_EQ(std::count(names.begin(), names.end(), "results.json"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "checkpoint.jsonl"), 0);
  for (const std::string& p : r.plots) {
    EXPECT_EQ(std::count(names.begin(), names.end(), p), 1) << p;
  }
}

TEST(SweepRun, ShardsMergeIntoTheWholeSweep) {
  const fs::path dir = test::fresh_dir("sweep_run_shards");
  const Inputs in = inputs(dir);
  const auto load = [&] { return Model::load(in.model); };
  const SweepReports whole = run_sweep(settings(in, dir / "whole"), load);
  std::vector<std::string> shard_dirs;
  for (int i = 0; i < 2; ++i) {
    SweepSettings s = settings(in, dir / ("s" + std::to_string(i)));
    s.shard = {i, 2};
    const SweepReports r = run_sweep(s, load);
    EXPECT_TRUE(r.markdown.empty());
    EXPECT_EQ(r.n_mine, i == 0 ? 2u : 1u);
    EXPECT_EQ(test::names_in(s.out_dir),
              (std::vector<std::string>{"checkpoint.jsonl", "shard.json"}));
    shard_dirs.push_back(s.out_dir);
    // A finished shard is refused without resume, before the model loads.
    test::expect_error([&] { run_sweep(s, [] { return std::shared_ptr<const Model>(); }); },
                       "holds a finished shard (shard.json)");
    s.resume = true;  // resumed: every task is known, nothing runs
    EXPECT_EQ(run_sweep(s, load).n_known, static_cast<int>(r.n_mine));
  }
  const MergedReports merged = merge_sweep(shard_dirs, "", (dir / "merged").string());
  EXPECT_EQ(merged.n_shards, 2u);
  EXPECT_EQ(merged.plots, whole.plots);
  // Every task's outputs and scores are the whole sweep's.
  const auto items = [](const fs::path& d) {
    return nlohmann::json::parse(test::slurp(d / "results.json"))["items"];
  };
  EXPECT_EQ(items(dir / "merged"), items(dir / "whole"));
  EXPECT_NE(merged.markdown.find("| streaming | 8 |"), std::string::npos);
  test::expect_error([&] { merge_sweep({(dir / "whole").string()}, in.tasks, "unused"); },
                     "is not a finished shard");
}

}  // namespace
}  // namespace fasa
