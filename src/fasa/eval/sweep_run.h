// Running a sweep (`fasa eval sweep`, eval/sweep.h) into its output directory, whole or one shard
// of it, and merging the shards (`fasa eval merge`). Every finished task is appended to
// DIR/checkpoint.jsonl at once (eval/sweep_checkpoint.h), so an interrupted run started again
// with `resume` runs only the others. A whole sweep ends with DIR/results.json, results.md and
// the plots (the checkpoint removed); a shard with DIR/shard.json beside its checkpoint
// (eval/sweep_shard.h), which merge_sweep reads back.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fasa/eval/sweep.h"
#include "fasa/eval/sweep_shard.h"
#include "fasa/model/model.h"

namespace fasa {

struct SweepSettings {
  std::string tasks_file;             // the JSONL task file
  std::vector<std::string> policies;  // policy specs
  std::vector<std::string> budgets;   // sweep_entries' budgets
  // The calibration of the policies that take one; "": the model's stored one, else online.
  std::string calib;
  std::string out_dir;
  int n_ctx = 0;  // 0: fitted to the tasks
  int jobs = 1;
  std::string kv_type = "f16";
  bool chat = false;
  bool question_under_policy = false;
  bool resume = false;              // finish the sweep DIR/checkpoint.jsonl holds
  bool resume_other_build = false;  // with resume: accept tasks another build ran
  ShardSpec shard;                  // count 0: the whole sweep
  // The build, as results record it: its release and commit, and the kernels it runs.
  std::string version, kernels;
};

// What a sweep is about to run.
struct SweepStart {
  size_t n_settings = 0;   // policy settings (policy × budget)
  size_t n_tasks = 0;      // tasks in the file
  size_t n_mine = 0;       // of them, this run's (the shard's, or all)
  size_t n_done = 0;       // of those, finished in the checkpoint (resume)
  std::string checkpoint;  // the checkpoint file's path
};

// What run_sweep tells as it goes (each may be null).
struct SweepEvents {
  // No calibration given and a policy takes one: the model's stored calibration (its path), or
  // "online" when none is stored.
  std::function<void(const std::string& calib)> calibration;
  std::function<void(const SweepStart& start)> started;  // the model loaded, the checkpoint read
  std::function<void(int done, int total)> progress;     // generations (run_tasks' progress)
};

// What a sweep wrote.
struct SweepReports {
  std::string markdown;            // results.md's text (empty for a shard)
  std::vector<std::string> plots;  // the plot files written beside it, by name
  size_t n_mine = 0;               // tasks of this run (the shard's, or all)
  int n_known = 0;                 // of them, read from the checkpoint
  double seconds = 0.0;            // this run's wall time
};

// Runs the sweep `s` describes with the model load_model() gives (called once the settings, the
// task file and the output directory are checked). Throws fasa::Error for bad settings, a
// directory holding a finished shard (unless resume), a checkpoint of other settings (or, unless
// resume_other_build, of another build), and any failure of the run (the checkpoint stays
// unless it holds no task).
SweepReports run_sweep(const SweepSettings& s,
                       const std::function<std::shared_ptr<const Model>()>& load_model,
                       const SweepEvents& events = {});

// What merge_sweep wrote.
struct MergedReports {
  std::string markdown;            // results.md's text
  std::vector<std::string> plots;  // the plot files written beside it
  size_t n_shards = 0;
};

// Merges the finished shards in `dirs` (one directory each) into out_dir's results.json,
// results.md and plots. tasks_file: the sweep's task file ("": the path shard 0 recorded; its
// sha256 must be the shards'). Throws fasa::Error naming a directory that is not a finished
// shard, and merge_shards' errors.
MergedReports merge_sweep(const std::vector<std::string>& dirs, const std::string& tasks_file,
                          const std::string& out_dir);

}  // namespace fasa
