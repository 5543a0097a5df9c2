// Long-context task files (JSON Lines) and their metrics. One object per line:
//   {"id": "...", "task": "...", "prompt": "...", "answers": ["..."], "max_new_tokens": N,
//    "metric": "contains" | "exact" | "all"}
// Other fields are allowed and ignored (RULER-style files carry extra bookkeeping).
#pragma once

#include <string>
#include <vector>

namespace fasa {

enum class TaskMetric { Contains, Exact, All };

struct Task {
  std::string id;
  std::string task;  // kind, e.g. "passkey"; results are grouped by it
  std::string prompt;
  std::vector<std::string> answers;  // [n_answers], at least one, none empty
  int max_new_tokens = 0;            // >= 1
  TaskMetric metric = TaskMetric::Contains;
};

// Parses a whole JSONL file; throws fasa::Error naming the file, line and field for any problem
// (bad JSON, missing or mistyped field, unknown metric, duplicate id, no tasks at all).
std::vector<Task> load_tasks(const std::string& path);
// The same, from text already in memory (`source` names it in errors).
std::vector<Task> parse_tasks(const std::string& text, const std::string& source);
// One task as one JSON line (no newline), the inverse of parse_tasks for that line.
std::string task_to_json_line(const Task& t);

const char* metric_name(TaskMetric m);
// "contains", "exact" or "all"; throws fasa::Error otherwise.
TaskMetric parse_metric(const std::string& name);

// Scores one generated output in [0, 1]. Comparisons are case-insensitive and ignore leading and
// trailing white space and runs of inner white space (RULER's string match, lower-cased):
//   contains: 1 if any answer occurs in the output;
//   exact:    1 if the output equals an answer;
//   all:      1 if every answer occurs in the output.
double score_output(TaskMetric metric, const std::string& output,
                    const std::vector<std::string>& answers);
// RULER's partial credit in [0, 1], with the same matching: for `all`, the share of the answers
// that occur in the output (an answer listed twice counts twice); for `contains` and `exact`,
// score_output (one answer is enough, so there is nothing partial to credit).
double partial_credit(TaskMetric metric, const std::string& output,
                      const std::vector<std::string>& answers);

}  // namespace fasa
