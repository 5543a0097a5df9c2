// The JSON of a task run that `fasa eval tasks --json` prints and the Python package's
// eval_tasks returns (one builder, so the two cannot drift apart).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "fasa/eval/task_runner.h"
#include "fasa/eval/tasks.h"

namespace fasa {

// Choice tasks' mean acc_norm per kind for policy p (an empty object when there are none).
nlohmann::ordered_json acc_norm_by_kind(const std::vector<Task>& tasks, const TaskRunResult& r,
                                        size_t p);
// One object per (task, policy), tasks in file order: id, task, policy, n_prompt, metric,
// score, partial, output, and for choice tasks acc_norm and choice_logprobs.
nlohmann::ordered_json task_items_json(const std::vector<Task>& tasks, const TaskRunResult& r);

}  // namespace fasa
