// A sweep split over machines by task: `fasa eval sweep --shard I/N` runs the tasks whose index
// % N == I, every setting of each (a task's settings share one dense prefill and one checkpoint
// line, eval/shared_prefill.h, eval/sweep_checkpoint.h). A finished shard leaves two files in
// its directory: checkpoint.jsonl (its tasks' outcomes) and shard.json (what the reports need
// besides them: the inputs, the settings, the context run). `fasa eval merge` reads the shards
// back (merge_shards), checks that they are the N shards of one sweep, and rebuilds the
// TaskRunResult the whole sweep would have had, so its reports (eval/sweep.h) are the
// single-machine sweep's but for the fields that describe the run (date, seconds, threads...).
//
// shard.json: {"format": "fasa-sweep-shard", "version": 1, "shard": [I, N], "fasa_version",
//   "kernels" (absent in older records),
//   "date", "model", "model_sha256", "calib", "calib_sha256", "tasks_file", "tasks_sha256",
//   "n_tasks", "n_ctx_requested", "n_ctx", "chat", "protocol", "kv_type", "threads", "seconds",
//   "prefills", "resumed_tasks", "entries": [{"name", "budget", "spec", "label"}]}
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "fasa/eval/sweep.h"
#include "fasa/eval/sweep_checkpoint.h"
#include "fasa/eval/task_runner.h"
#include "fasa/eval/tasks.h"

namespace fasa {

struct ShardSpec {
  int index = 0;
  int count = 0;  // 0: not sharded (the whole sweep)
};

// "I/N" with 0 <= I < N <= kMaxShards; throws fasa::Error naming the text otherwise.
constexpr int kMaxShards = 1 << 16;
ShardSpec parse_shard(const std::string& text);
// [n_tasks]: 1 for the tasks another shard runs (TaskRunResume::elsewhere); empty when not
// sharded.
std::vector<char> tasks_elsewhere(ShardSpec shard, size_t n_tasks);
// The number of tasks of the file that are the shard's.
size_t shard_task_count(ShardSpec shard, size_t n_tasks);

// A finished shard.
struct ShardRecord {
  ShardSpec shard;
  SweepMeta meta;  // (task_builds: not stored; merge counts them from the checkpoint lines)
  std::vector<SweepEntry> entries;  // [n_settings]
  int n_tasks = 0;                  // tasks in the file (all shards')
  int n_ctx_requested = 0;          // --ctx (0: fitted to the tasks)
  int n_ctx = 0;                    // the context run: fitted over every task, not the shard's
  double seconds = 0.0;             // this shard's last run's wall time
  int n_prefills = 0;               // prefills run by that run
};

std::string shard_json(const ShardRecord& rec);
// Throws fasa::Error naming `source` and the field for anything missing or out of range.
ShardRecord parse_shard_json(const std::string& text, const std::string& source);
// What the shard's checkpoint was written for.
SweepIdentity shard_identity(const ShardRecord& rec);

struct ShardFiles {
  std::string dir;         // names the shard in errors
  std::string shard_json;  // the contents of DIR/shard.json
  std::string checkpoint;  // the contents of DIR/checkpoint.jsonl
};

struct MergedSweep {
  SweepMeta meta;  // shard 0's, with resumed_tasks summed, task_builds counted over every
                   // task and shards = N; date as shard 0 recorded it (the caller sets the
                   // merge's)
  std::vector<SweepEntry> entries;
  TaskRunResult r;  // seconds, prefills: summed over the shards' last runs
};

// The N shards of one sweep, in any order, over `tasks` (the task file, whose sha256 is
// `tasks_sha256`). Throws fasa::Error naming a directory when: a shard is missing or given twice,
// the shards disagree on the shard count, model, calibration, task file, build, context, chat,
// KV type or settings, the task file is not theirs, or a shard's checkpoint lacks one of its
// tasks (it did not finish) or is damaged.
MergedSweep merge_shards(const std::vector<ShardFiles>& shards, const std::vector<Task>& tasks,
                         const std::string& tasks_sha256);

}  // namespace fasa
