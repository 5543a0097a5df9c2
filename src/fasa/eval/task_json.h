// The JSON of a task run that `fasa eval tasks --json` prints and the Python package's
// eval_tasks returns, and of a perplexity result (`fasa eval ppl --json`, eval_ppl): one builder
// each, so the two cannot drift apart. Provenance (build, hashes) is each caller's own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/eval/perplexity.h"
#include "fasa/eval/task_runner.h"
#include "fasa/eval/tasks.h"

namespace fasa {

// Choice tasks' mean acc_norm per kind for policy p (an empty object when there are none).
nlohmann::ordered_json acc_norm_by_kind(const std::vector<Task>& tasks, const TaskRunResult& r,
                                        size_t p);
// The calibration a policy spec names ("fasa:calib=c.json,budget=256" -> "c.json"; "online",
// "auto"), or "" when it names none.
std::string spec_calibration(const std::string& spec);
// A result's calibration fields for a policy spec: "calibration" (calibration_kind), and for a
// file its sha256 ("calib_sha256") and, with `path`, its path ("calib"). Nothing for "".
void add_calibration_json(nlohmann::ordered_json& j, const std::string& spec, bool path);

// {kind: policy p's mean} of a score table, kinds in its order (by_task, partial_by_task).
nlohmann::ordered_json kind_means_json(const TaskScoreTable& t, size_t p);

// Per policy p, over every task: the lossless decoder's counts, decode time and tokens.
struct LosslessTotals {
  LosslessStats st;
  double decode_ms = 0.0;
  int64_t tokens = 0;
  double tokens_per_s() const;
};
LosslessTotals lossless_totals(const TaskRunResult& r, size_t p);

// One object per policy: policy, calib_sha256 (when the spec names a calibration), score,
// mean_of_kinds, partial, partial_mean_of_kinds, by_task, partial_by_task, acc_norm_by_task
// (choice tasks), decode_tokens_per_s, and with `lossless` the lossless decoder's counts.
nlohmann::ordered_json task_results_json(const std::vector<Task>& tasks, const TaskRunResult& r,
                                         bool lossless);

// One perplexity result: model, text, policy, kv_type, n_ctx, n_decode, chunks, tokens, ppl and
// its standard error, mean NLL, per-chunk ppl, rows read, seconds, threads, peak RSS.
nlohmann::ordered_json ppl_result_json(const std::string& model_path, const std::string& text,
                                       const std::string& kv_type, const PplOptions& o,
                                       const PplResult& r);

// One object per (task, policy), tasks in file order: id, task, policy, n_prompt, metric,
// score, partial, output, and for choice tasks acc_norm and choice_logprobs.
nlohmann::ordered_json task_items_json(const std::vector<Task>& tasks, const TaskRunResult& r);

}  // namespace fasa
