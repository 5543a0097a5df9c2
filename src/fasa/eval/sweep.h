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
  bool chat = false;
  std::string kv_type;
  int threads = 0;
  int resumed_tasks = 0;  // tasks read from a checkpoint (--resume) rather than run by this run
  // Tasks per build that ran them ("unrecorded" for old checkpoint lines); one entry unless a
  // resume mixed builds (--resume-other-build).
  std::vector<std::pair<std::string, int>> task_builds;
};

std::string sweep_json(const SweepMeta& meta, const std::vector<Task>& tasks,
                       const std::vector<SweepEntry>& entries, const TaskRunResult& r);
std::string sweep_markdown(const SweepMeta& meta, const std::vector<Task>& tasks,
                           const std::vector<SweepEntry>& entries, const TaskRunResult& r);
// (file name, SVG): "score_vs_budget.svg" (mean over task kinds), then one per task kind.
std::vector<std::pair<std::string, std::string>> sweep_plots(const std::vector<Task>& tasks,
                                                             const std::vector<SweepEntry>& entries,
                                                             const TaskRunResult& r);

}  // namespace fasa
