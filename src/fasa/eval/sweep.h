// `fasa eval sweep`: every policy at every budget on one task file, and its reports (a JSON of
// every result, a markdown table, SVG plots of score against budget).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fasa/eval/task_runner.h"
#include "fasa/eval/tasks.h"

namespace fasa {

struct SweepEntry {
  std::string name;     // policy name, e.g. "fasa"
  double budget = 0.0;  // 0: none (full attention)
  std::string spec;     // complete policy spec
  std::string label;    // the spec without budget= (and calib= when it is --calib's): one
                        // line per label in plots
};

// Policies × budgets. `full` (and a policy given with its own budget= option) runs once; every
// other policy once per budget, with budget= added, and calib= for the policies that read a
// calibration (fasa, double-sparsity, X+fasa) when `calib` is set. Throws fasa::Error for an
// empty list or a bad budget.
std::vector<SweepEntry> sweep_entries(const std::vector<std::string>& policies,
                                      const std::vector<std::string>& budgets,
                                      const std::string& calib);

struct SweepMeta {
  std::string model, model_sha256, calib, calib_sha256, tasks_file, tasks_sha256;
  std::string version, date;
  std::string kernels;  // the instruction set and AMX state the run's kernels used
  bool chat = false;
  bool question_under_policy = false;  // the protocol (TaskRunOptions::question_under_policy)
  std::string kv_type;
  int threads = 0;
  int resumed_tasks = 0;  // tasks read from a checkpoint (--resume) rather than run by this run
  int shards = 0;         // merged from this many shards (`eval merge`); 0: one run
  // Tasks per build that ran them ("unrecorded" for old checkpoint lines); one entry unless a
  // resume mixed builds (--resume-other-build).
  std::vector<std::pair<std::string, int>> task_builds;
};

// What one setting (policy, budget) of a sweep scored, read and held, over every task.
struct SweepRowStats {
  double score = 0.0, score_ci95 = 0.0;      // mean of the kinds' means; 95 % CI half-width
  double partial = 0.0, partial_ci95 = 0.0;  // the same of the partial credit (RULER's)
  double kv_bytes_read_per_token = 0.0;      // side data + distinct rows, per decoded token
  double decode_ms_per_token = 0.0;    // generation time / generated tokens (0: none recorded)
  double rows_read_fraction = 1.0;     // distinct rows read / visible, global layers
  double kv_resident_bytes = 0.0;      // mean over tasks of each generation's peak resident bytes
  uint64_t kv_resident_bytes_max = 0;  // the largest of those peaks
};
// [n_settings]. The CIs: ci95_half_width (eval/confidence.h) over the tasks of each kind.
// Resident bytes over the outcomes that recorded them (TaskOutcome::kv_resident_bytes > 0).
std::vector<SweepRowStats> sweep_row_stats(const std::vector<Task>& tasks, const TaskRunResult& r);

// The reference of each setting: the index of the `oracle:gqa=per-head` setting at the same
// budget (the per-head oracle reads each query head's own top-B: the upper bound of selection
// at that budget), or -1 (no such setting, or a setting without a budget). [n_settings]
std::vector<int> sweep_references(const std::vector<SweepEntry>& entries);

// Throws fasa::Error (an internal error) unless r holds one outcome per (task, entry), in order.
void check_sweep_aligned(const std::vector<Task>& tasks, const std::vector<SweepEntry>& entries,
                         const TaskRunResult& r);

std::string sweep_json(const SweepMeta& meta, const std::vector<Task>& tasks,
                       const std::vector<SweepEntry>& entries, const TaskRunResult& r);
std::string sweep_markdown(const SweepMeta& meta, const std::vector<Task>& tasks,
                           const std::vector<SweepEntry>& entries, const TaskRunResult& r);
// (file name, SVG): "score_vs_budget.svg" (mean over task kinds), then one per task kind, then
// "score_vs_bytes.svg": score against KV bytes read per decoded token (log-2 axis), one line per
// label through its budgets, full as one point, each point with its 95 % CI as an error bar.
// A plot with nothing to draw (e.g. only fractions of the context and no full) is left out.
std::vector<std::pair<std::string, std::string>> sweep_plots(const std::vector<Task>& tasks,
                                                             const std::vector<SweepEntry>& entries,
                                                             const TaskRunResult& r);

}  // namespace fasa
