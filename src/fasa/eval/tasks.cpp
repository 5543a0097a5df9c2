#include "fasa/eval/tasks.h"

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/core/input_file.h"
#include "fasa/io/json_read.h"

namespace fasa {

namespace {

using json = nlohmann::json;

constexpr int kMaxNewTokens = 1 << 20;

// Lower case (ASCII), trimmed, inner white-space runs folded to one space.
std::string normalize(const std::string& s) {
  std::string out;
  bool space = false;
  for (unsigned char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c);
  }
  return out;
}

constexpr size_t kMaxStop = 16;

// A non-empty array of strings, each non-empty once `trim`med (normalize) or at all.
std::vector<std::string> strings(const JsonObject<json>& o, const char* key, size_t min_n,
                                 bool trim) {
  const json& a = o.at(key);
  const char* what = min_n > 1 ? "an array of at least two" : "a non-empty array of";
  if (!a.is_array() || a.size() < min_n) {
    fail("{}: field \"{}\" must be {} strings", o.where(), key, what);
  }
  std::vector<std::string> out;
  for (const json& x : a) {
    if (!x.is_string() || (trim ? normalize(x.get<std::string>()) : x.get<std::string>()).empty()) {
      fail("{}: field \"{}\" must hold non-empty strings", o.where(), key);
    }
    out.push_back(x.get<std::string>());
  }
  return out;
}

void parse_choice_fields(const JsonObject<json>& o, Task& t) {
  t.choices = strings(o, "choices", 2, false);
  t.gold = o.number<int>("gold", 0, static_cast<int>(t.choices.size()) - 1);
}

void parse_generation_fields(const JsonObject<json>& o, Task& t) {
  t.answers = strings(o, "answers", 1, true);
  t.max_new_tokens = o.number<int>("max_new_tokens", 1, kMaxNewTokens);
  if (o.has("stop")) {
    t.stop = strings(o, "stop", 1, false);
    if (t.stop.size() > kMaxStop) {
      fail("{}: field \"stop\" has {} strings (at most {})", o.where(), t.stop.size(), kMaxStop);
    }
  }
}

Task parse_task(const json& j, const std::string& where) {
  const JsonObject<json> o(j, where);
  Task t;
  t.id = o.string("id");
  if (t.id.empty()) fail("{}: field \"id\" is empty", where);
  t.task = o.string("task");
  if (t.task.empty()) fail("{}: field \"task\" is empty", where);
  t.prompt = o.string("prompt");
  if (t.prompt.empty()) fail("{}: field \"prompt\" is empty", where);
  if (o.has("question")) {
    t.question = o.string("question");
    if (t.question.empty() || t.question.size() >= t.prompt.size() ||
        t.prompt.compare(t.prompt.size() - t.question.size(), t.question.size(), t.question) != 0) {
      fail(
          "{}: field \"question\" of task '{}' must be a non-empty tail of its \"prompt\", shorter "
          "than the prompt",
          where, t.id);
    }
  }
  try {
    t.metric = parse_metric(o.string("metric"));
  } catch (const Error& e) {
    fail("{}: {}", where, e.what());
  }
  if (t.metric == TaskMetric::Choice) {
    parse_choice_fields(o, t);
  } else {
    parse_generation_fields(o, t);
  }
  return t;
}

}  // namespace

const char* metric_name(TaskMetric m) {
  switch (m) {
    case TaskMetric::Contains: return "contains";
    case TaskMetric::Exact: return "exact";
    case TaskMetric::All: return "all";
    case TaskMetric::Choice: return "choice";
  }
  return "?";
}

TaskMetric parse_metric(const std::string& name) {
  if (name == "contains") return TaskMetric::Contains;
  if (name == "exact") return TaskMetric::Exact;
  if (name == "all") return TaskMetric::All;
  if (name == "choice") return TaskMetric::Choice;
  fail("unknown metric \"{}\" (known: contains, exact, all, choice)", name);
}

std::vector<Task> parse_tasks(const std::string& text, const std::string& source) {
  std::vector<Task> tasks;
  std::set<std::string> ids;
  std::istringstream in(text);
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines are fine
    const std::string where = source + ":" + std::to_string(line_no);
    Task t = parse_task(json_parse<json>(line, where), where);
    if (!ids.insert(t.id).second) fail("{}: duplicate id \"{}\"", where, t.id);
    tasks.push_back(std::move(t));
  }
  if (tasks.empty()) fail("{}: no tasks (expected one JSON object per line)", source);
  return tasks;
}

std::vector<Task> load_tasks(const std::string& path) {
  return parse_tasks(read_input_file(path, "task file"), path);
}

std::string task_to_json_line(const Task& t) {
  nlohmann::ordered_json j;
  j["id"] = t.id;
  j["task"] = t.task;
  j["prompt"] = t.prompt;
  if (!t.question.empty()) j["question"] = t.question;
  if (t.metric == TaskMetric::Choice) {
    j["choices"] = t.choices;
    j["gold"] = t.gold;
  } else {
    j["answers"] = t.answers;
    j["max_new_tokens"] = t.max_new_tokens;
    if (!t.stop.empty()) j["stop"] = t.stop;
  }
  j["metric"] = metric_name(t.metric);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

double score_output(TaskMetric metric, const std::string& output,
                    const std::vector<std::string>& answers) {
  const std::string out = normalize(output);
  auto found = [&](const std::string& a) { return out.find(normalize(a)) != std::string::npos; };
  switch (metric) {
    case TaskMetric::Contains:
      for (const auto& a : answers) {
        if (found(a)) return 1.0;
      }
      return 0.0;
    case TaskMetric::Exact:
      for (const auto& a : answers) {
        if (out == normalize(a)) return 1.0;
      }
      return 0.0;
    case TaskMetric::All:
      for (const auto& a : answers) {
        if (!found(a)) return 0.0;
      }
      return 1.0;
    case TaskMetric::Choice: fail("score_output: a choice task is scored by log-likelihood");
  }
  return 0.0;
}

double partial_credit(TaskMetric metric, const std::string& output,
                      const std::vector<std::string>& answers) {
  if (metric != TaskMetric::All || answers.empty()) return score_output(metric, output, answers);
  const std::string out = normalize(output);
  size_t found = 0;
  for (const auto& a : answers) found += out.find(normalize(a)) != std::string::npos ? 1 : 0;
  return static_cast<double>(found) / static_cast<double>(answers.size());
}

}  // namespace fasa
