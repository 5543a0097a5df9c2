#include "fasa/eval/protocol_compare.h"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "fasa/core/error.h"
#include "fasa/eval/report_names.h"
#include "fasa/eval/sweep_scores.h"
#include "fasa/eval/task_runner.h"

namespace fasa {

namespace {

void check_same(const SweepScores& d, const SweepScores& q, const std::string& what,
                const std::string& a, const std::string& b) {
  if (a != b) {
    fail("the two sweeps differ in {}: {} has {}, {} has {}", what, d.source, a, q.source, b);
  }
}

ProtocolRow compare_row(const SweepScores& d, const SweepScores& q, const std::string& spec) {
  ProtocolRow row;
  row.spec = spec;
  row.budget = d.budget.at(spec);
  row.dense_bytes = d.bytes.at(spec);
  row.question_bytes = q.bytes.at(spec);
  const auto& sd = d.score.at(spec);
  const auto& sq = q.score.at(spec);
  std::map<std::string, double> diff;
  for (const std::string& id : d.ids) {
    diff[id] = sq.at(id) - sd.at(id);
    row.lost += diff[id] < 0.0 ? 1 : 0;
    row.gained += diff[id] > 0.0 ? 1 : 0;
  }
  const KindMean m = kind_mean(d, diff);
  row.diff = m.mean;
  row.diff_ci95 = m.ci95;
  row.kind_diff = m.by_kind;
  row.dense = kind_mean(d, sd).mean;
  row.question = kind_mean(d, sq).mean;
  return row;
}

std::string budget_text(double b) { return b <= 0.0 ? "-" : fmt::format("{:g}", b); }

}  // namespace

ProtocolComparison compare_protocols(const ProtocolSweep& a, const ProtocolSweep& b) {
  SweepScores x = read_sweep_scores(a.doc, a.source), y = read_sweep_scores(b.doc, b.source);
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
  c.kinds = d.kinds;
  for (const std::string& spec : d.specs) {
    if (q.budget.count(spec) > 0) c.rows.push_back(compare_row(d, q, spec));
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
      report_file_name(c.model), c.model_sha256.substr(0, 16), report_file_name(c.tasks_file),
      c.n_tasks, c.kinds.size(), c.dense_source, c.dense_version, c.question_source,
      c.question_version);
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
