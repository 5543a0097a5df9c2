// Task files (JSON Lines) and their metrics. One object per line, a generation task:
//   {"id": "...", "task": "...", "prompt": "...", "answers": ["..."], "max_new_tokens": N,
//    "metric": "contains" | "exact" | "all", "stop": ["\n"]}          ("stop" optional)
// or a multiple-choice task, scored by log-likelihood (eval/choice_score.h), not generated:
//   {"id": "...", "task": "...", "prompt": "...", "choices": [" Paris", " Rome"], "gold": 0,
//    "metric": "choice"}
// Each choice is the text that follows the prompt as it stands (a leading space included).
// Other fields are allowed and ignored (RULER-style files carry extra bookkeeping; a choice
// task's "answers" or "max_new_tokens", a generation task's "choices").
#pragma once

#include <string>
#include <vector>

namespace fasa {

enum class TaskMetric { Contains, Exact, All, Choice };

struct Task {
  std::string id;
  std::string task;  // kind, e.g. "passkey"; results are grouped by it
  std::string prompt;
  std::vector<std::string> answers;  // [n_answers], at least one, none empty; none for Choice
  int max_new_tokens = 0;            // >= 1; 0 for Choice
  TaskMetric metric = TaskMetric::Contains;
  std::vector<std::string> stop;     // [n_stop] generation ends before the first (not Choice)
  std::vector<std::string> choices;  // [n_choices] Choice: at least two, none empty
  int gold = -1;                     // Choice: the right one, in [0, n_choices)
  // The exact tail of `prompt` that asks the question (empty: none given); the context is the
  // prompt without it. --question-under-policy runs these tokens under the policy.
  std::string question;
};

// Parses a whole JSONL file; throws fasa::Error naming the file, line and field for any problem
// (bad JSON, missing or mistyped field, unknown metric, duplicate id, no tasks at all).
std::vector<Task> load_tasks(const std::string& path);
// The same, from text already in memory (`source` names it in errors).
std::vector<Task> parse_tasks(const std::string& text, const std::string& source);
// One task as one JSON line (no newline), the inverse of parse_tasks for that line.
std::string task_to_json_line(const Task& t);

const char* metric_name(TaskMetric m);
// "contains", "exact", "all" or "choice"; throws fasa::Error otherwise.
TaskMetric parse_metric(const std::string& name);

// Scores one generated output in [0, 1]. Comparisons are case-insensitive and ignore leading and
// trailing white space and runs of inner white space (RULER's string match, lower-cased):
//   contains: 1 if any answer occurs in the output;
//   exact:    1 if the output equals an answer;
//   all:      1 if every answer occurs in the output.
// (Choice tasks are not scored from an output: eval/choice_score.h.)
double score_output(TaskMetric metric, const std::string& output,
                    const std::vector<std::string>& answers);
// RULER's partial credit in [0, 1], with the same matching: for `all`, the share of the answers
// that occur in the output (an answer listed twice counts twice); for `contains` and `exact`,
// score_output (one answer is enough, so there is nothing partial to credit).
double partial_credit(TaskMetric metric, const std::string& output,
                      const std::vector<std::string>& answers);

}  // namespace fasa
