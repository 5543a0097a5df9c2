#include "fasa/eval/protocol_compare.h"

#include <fmt/format.h>

#include <limits>
#include <map>
#include <utility>

#include "fasa/core/error.h"
#include "fasa/eval/confidence.h"
#include "fasa/eval/task_runner.h"
#include "fasa/io/json_read.h"

namespace fasa {

namespace {

using Json = nlohmann::json;

// One sweep as the comparison reads it.
struct SweepScores {
  std::string source, protocol, model, model_sha256, tasks_file, tasks_sha256, version;
  std::vector<std::string> ids;                 // [n_tasks] in file order
  std::map<std::string, std::string> kind_of;   // task id -> kind
  std::vector<std::string> specs;               // settings in order
  std::map<std::string, double> budget, bytes;  // spec -> budget, KV bytes read per token
  std::map<std::string, std::map<std::string, double>> score;  // spec -> task id -> score
};

SweepScores read_sweep(const ProtocolSweep& s) {
  const JsonObject<Json> root(s.doc, s.source);
  SweepScores r;
  r.source = s.source;
  // A results.json written before the protocol was recorded ran the dense-prefill protocol.
  r.protocol = root.has("protocol") ? root.string("protocol") : protocol_name(false);
  if (r.protocol != protocol_name(false) && r.protocol != protocol_name(true)) {
    fail("{}: field \"protocol\" must be \"{}\" or \"{}\" (got \"{}\")", s.source,
         protocol_name(false), protocol_name(true), r.protocol);
  }
  r.model = root.string("model");
  r.model_sha256 = root.string("model_sha256");
  r.tasks_file = root.string("tasks_file");
  r.tasks_sha256 = root.string("tasks_sha256");
  r.version = root.string("fasa_version");
  constexpr double kMax = std::numeric_limits<double>::max();
  const Json& results = root.array("results");
  for (size_t i = 0; i < results.size(); ++i) {
    const JsonObject<Json> e = root.element("results", i);
    const std::string spec = e.string("spec");
    r.specs.push_back(spec);
    r.budget[spec] = e.number<double>("budget", 0.0, kMax);
    r.bytes[spec] = e.number<double>("kv_bytes_read_per_token", 0.0, kMax);
  }
  const Json& items = root.array("items");
  for (size_t i = 0; i < items.size(); ++i) {
    const JsonObject<Json> it = root.element("items", i);
    const std::string id = it.string("id");
    const std::string spec = it.string("spec");
    if (r.budget.count(spec) == 0) {
      fail("{}: item {} has setting '{}', which is not in \"results\"", s.source, i, spec);
    }
    if (r.kind_of.emplace(id, it.string("task")).second) r.ids.push_back(id);
    if (!r.score[spec].emplace(id, it.number<double>("score", 0.0, 1.0)).second) {
      fail("{}: task '{}' has two items for setting '{}'", s.source, id, spec);
    }
  }
  for (const std::string& spec : r.specs) {
    if (r.score[spec].size() != r.ids.size()) {
      fail("{}: setting '{}' has {} items for {} tasks", s.source, spec, r.score[spec].size(),
           r.ids.size());
    }
  }
  if (r.ids.empty()) fail("{}: no items", s.source);
  return r;
}

void check_same(const SweepScores& d, const SweepScores& q, const std::string& what,
                const std::string& a, const std::string& b) {
  if (a != b) {
    fail("the two sweeps differ in {}: {} has {}, {} has {}", what, d.source, a, q.source, b);
  }
}

ProtocolRow compare_row(const SweepScores& d, const SweepScores& q, const std::string& spec,
                        const std::vector<std::string>& kinds) {
  ProtocolRow row;
  row.spec = spec;
  row.budget = d.budget.at(spec);
  row.dense_bytes = d.bytes.at(spec);
  row.question_bytes = q.bytes.at(spec);
  std::map<std::string, size_t> kind_index;
  for (size_t k = 0; k < kinds.size(); ++k) kind_index[kinds[k]] = k;
  std::vector<std::vector<double>> diffs(kinds.size()), dense(kinds.size()), ques(kinds.size());
  for (const std::string& id : d.ids) {
    const size_t k = kind_index.at(d.kind_of.at(id));
    const double sd = d.score.at(spec).at(id), sq = q.score.at(spec).at(id);
    diffs[k].push_back(sq - sd);
    dense[k].push_back(sd);
    ques[k].push_back(sq);
    row.lost += sq < sd ? 1 : 0;
    row.gained += sq > sd ? 1 : 0;
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0.0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  for (size_t k = 0; k < kinds.size(); ++k) {
    row.kind_diff.push_back(mean(diffs[k]));
    row.diff += row.kind_diff.back() / static_cast<double>(kinds.size());
    row.dense += mean(dense[k]) / static_cast<double>(kinds.size());
    row.question += mean(ques[k]) / static_cast<double>(kinds.size());
  }
  row.diff_ci95 = ci95_half_width(diffs);
  return row;
}

std::string budget_text(double b) { return b <= 0.0 ? "-" : fmt::format("{:g}", b); }

}  // namespace

ProtocolComparison compare_protocols(const ProtocolSweep& a, const ProtocolSweep& b) {
  SweepScores x = read_sweep(a), y = read_sweep(b);
  if (x.protocol == y.protocol) {
    fail(
        "{} and {} both ran the {} protocol: give one sweep of each (one run with "
        "--question-under-policy, one without)",
        x.source, y.source, x.protocol);
  }
  if (x.protocol == protocol_name(true)) std::swap(x, y);
  const SweepScores& d = x;
  const SweepScores& q = y;
  check_same(d, q, "model_sha256", d.model_sha256, q.model_sha256);
  check_same(d, q, "tasks_sha256", d.tasks_sha256, q.tasks_sha256);
  if (d.ids != q.ids) fail("the two sweeps differ in their tasks: {} and {}", d.source, q.source);
  ProtocolComparison c;
  c.model = d.model;
  c.model_sha256 = d.model_sha256;
  c.tasks_file = d.tasks_file;
  c.tasks_sha256 = d.tasks_sha256;
  c.dense_source = d.source;
  c.question_source = q.source;
  c.dense_version = d.version;
  c.question_version = q.version;
  c.n_tasks = static_cast<int>(d.ids.size());
  for (const std::string& id : d.ids) {
    const std::string& kind = d.kind_of.at(id);
    bool seen = false;
    for (const auto& k : c.kinds) seen = seen || k == kind;
    if (!seen) c.kinds.push_back(kind);
  }
  for (const std::string& spec : d.specs) {
    if (q.budget.count(spec) > 0) c.rows.push_back(compare_row(d, q, spec, c.kinds));
  }
  if (c.rows.empty()) {
    fail("{} and {} have no setting in common (settings are matched by their spec)", d.source,
         q.source);
  }
  return c;
}

std::string protocol_markdown(const ProtocolComparison& c) {
  std::string s = fmt::format(
      "# Dense prefill against the question under the policy\n\nmodel `{}` (sha256 `{}`), tasks "
      "`{}` ({} tasks, {} kinds). Dense prefill: `{}` (fasa {}); question under the policy: `{}` "
      "(fasa {}).\n\n",
      c.model, c.model_sha256.substr(0, 16), c.tasks_file, c.n_tasks, c.kinds.size(),
      c.dense_source, c.dense_version, c.question_source, c.question_version);
  s += "Score = mean over task kinds of the kind's mean score. Δ = question − dense, paired over "
       "the same tasks, with its 95 % interval (normal approximation of the mean of the kinds' "
       "mean per-task differences); lost / gained = tasks scored lower / higher with the question "
       "under the policy. KV read/token counts every decode step (the question's too).\n\n";
  s += "| setting | budget | dense | question | Δ | 95 % interval | lost | gained |";
  for (const auto& k : c.kinds) s += " Δ " + k + " |";
  s += " KV read/token dense | question |\n| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |";
  for (size_t k = 0; k < c.kinds.size(); ++k) s += " ---: |";
  s += " ---: | ---: |\n";
  for (const ProtocolRow& r : c.rows) {
    s += fmt::format("| {} | {} | {:.3f} | {:.3f} | {:+.3f} | [{:+.3f}, {:+.3f}] | {} | {} |",
                     r.spec, budget_text(r.budget), r.dense, r.question, r.diff,
                     r.diff - r.diff_ci95, r.diff + r.diff_ci95, r.lost, r.gained);
    for (double x : r.kind_diff) s += fmt::format(" {:+.2f} |", x);
    s += fmt::format(" {:.0f} KiB | {:.0f} KiB |\n", r.dense_bytes / 1024.0,
                     r.question_bytes / 1024.0);
  }
  return s;
}

std::string protocol_json(const ProtocolComparison& c) {
  nlohmann::ordered_json j;
  j["model"] = c.model;
  j["model_sha256"] = c.model_sha256;
  j["tasks_file"] = c.tasks_file;
  j["tasks_sha256"] = c.tasks_sha256;
  j["n_tasks"] = c.n_tasks;
  j["task_kinds"] = c.kinds;
  j["dense"] = {{"results", c.dense_source}, {"fasa_version", c.dense_version}};
  j["question"] = {{"results", c.question_source}, {"fasa_version", c.question_version}};
  j["rows"] = nlohmann::ordered_json::array();
  for (const ProtocolRow& r : c.rows) {
    nlohmann::ordered_json e;
    e["spec"] = r.spec;
    e["budget"] = r.budget;
    e["dense"] = r.dense;
    e["question"] = r.question;
    e["diff"] = r.diff;
    e["diff_ci95"] = {r.diff - r.diff_ci95, r.diff + r.diff_ci95};
    e["lost"] = r.lost;
    e["gained"] = r.gained;
    nlohmann::ordered_json k = nlohmann::ordered_json::object();
    for (size_t i = 0; i < c.kinds.size(); ++i) k[c.kinds[i]] = r.kind_diff[i];
    e["diff_by_task"] = k;
    e["dense_kv_bytes_read_per_token"] = r.dense_bytes;
    e["question_kv_bytes_read_per_token"] = r.question_bytes;
    j["rows"].push_back(e);
  }
  return j.dump(1) + "\n";
}

}  // namespace fasa
