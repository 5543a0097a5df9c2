#include "fasa/eval/sweep.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/attention/policy.h"
#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/eval/report_names.h"
#include "fasa/eval/task_json.h"

namespace fasa {

namespace {

bool reads_calibration(const std::string& name) {
  return name == "fasa" || name == "double-sparsity" ||
         (name.size() > 5 && name.compare(name.size() - 5, 5, "+fasa") == 0);
}

std::string budget_text(double b) { return b <= 0.0 ? "-" : fmt::format("{:g}", b); }

}  // namespace

std::vector<SweepEntry> sweep_entries(const std::vector<std::string>& policies,
                                      const std::vector<std::string>& budgets,
                                      const std::string& calib) {
  if (policies.empty()) fail("no policies: give --policies LIST and/or --policy SPEC");
  std::vector<double> bs;
  bs.reserve(budgets.size());
  for (const auto& b : budgets) bs.push_back(parse_budget("sweep", b));
  std::vector<SweepEntry> out;
  for (const std::string& p : policies) {
    std::string name;
    PolicyOptions opts;
    parse_policy_spec(p, &name, &opts);
    if (!calib.empty() && reads_calibration(name) && !opts.count("calib")) opts["calib"] = calib;
    // A spec's own calibration, other than --calib's, stays in its label (an ablation's rows
    // must not read like the default's).
    const bool own_calib = opts.count("calib") && opts["calib"] != calib;
    auto spec_of = [&](const PolicyOptions& o, bool label) {
      std::string s = name;
      bool first = true;
      for (const auto& [k, v] : o) {
        if (label && (k == "budget" || (k == "calib" && !own_calib))) continue;
        s.append(first ? ":" : ",").append(k).append("=").append(v);
        first = false;
      }
      return s;
    };
    if (name == "full" || opts.count("budget")) {
      const double b = opts.count("budget") ? parse_budget(name, opts["budget"]) : 0.0;
      out.push_back({name, b, spec_of(opts, false), spec_of(opts, true)});
      continue;
    }
    if (bs.empty()) fail("policy '{}' needs --budgets", name);
    for (size_t i = 0; i < bs.size(); ++i) {
      PolicyOptions o = opts;
      o["budget"] = budgets[i];
      out.push_back({name, bs[i], spec_of(o, false), spec_of(o, true)});
    }
  }
  return out;
}

namespace {

// One setting's line of "results": its scores, and what it read.
nlohmann::ordered_json result_json(const SweepEntry& entry, const TaskScoreTable& t,
                                   const TaskScoreTable& partial, const SweepRowStats& st,
                                   size_t p) {
  nlohmann::ordered_json e;
  e["policy"] = entry.name;
  e["budget"] = entry.budget;
  e["spec"] = entry.spec;
  // Which calibration the row ran with ("online", "stored" or "file"), and a file's sha256:
  // a policy may carry its own calibration besides --calib.
  add_calibration_json(e, entry.spec, false);
  e["score"] = t.kind_average[p];
  e["score_ci95"] = {st.score - st.score_ci95, st.score + st.score_ci95};
  e["score_all_tasks"] = t.overall[p];
  e["partial"] = partial.kind_average[p];
  e["partial_ci95"] = {st.partial - st.partial_ci95, st.partial + st.partial_ci95};
  e["partial_all_tasks"] = partial.overall[p];
  e["by_task"] = kind_means_json(t, p);
  e["partial_by_task"] = kind_means_json(partial, p);
  e["kv_bytes_read_per_token"] = st.kv_bytes_read_per_token;
  e["decode_ms_per_token"] = st.decode_ms_per_token;
  e["rows_read_fraction"] = st.rows_read_fraction;
  e["kv_resident_bytes"] = st.kv_resident_bytes;
  e["kv_resident_bytes_max"] = st.kv_resident_bytes_max;
  return e;
}

// One line per (task, setting): its output and score.
nlohmann::ordered_json items_json(const std::vector<Task>& tasks,
                                  const std::vector<SweepEntry>& entries, const TaskRunResult& r) {
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  for (size_t i = 0; i < tasks.size(); ++i) {
    for (size_t p = 0; p < entries.size(); ++p) {
      const TaskOutcome& o = r.outcome[i][p];
      nlohmann::ordered_json it;
      it["id"] = tasks[i].id;
      it["task"] = tasks[i].task;
      it["spec"] = entries[p].spec;
      it["n_prompt"] = r.n_prompt[i];
      if (i < r.n_question.size() && r.n_question[i] > 0) it["n_question"] = r.n_question[i];
      it["score"] = o.score;
      it["partial"] = o.partial;
      it["n_generated"] = o.n_generated;
      it["kv_resident_bytes"] = o.kv_resident_bytes;
      it["output"] = o.output;
      items.push_back(it);
    }
  }
  return items;
}

}  // namespace

std::string sweep_json(const SweepMeta& meta, const std::vector<Task>& tasks,
                       const std::vector<SweepEntry>& entries, const TaskRunResult& r) {
  check_sweep_aligned(tasks, entries, r);
  const TaskScoreTable t = score_table(tasks, r);
  nlohmann::ordered_json j;
  j["fasa_version"] = meta.version;
  j["kernels"] = meta.kernels;
  j["date"] = meta.date;
  j["model"] = meta.model;
  j["model_sha256"] = meta.model_sha256;
  j["calib"] = meta.calib;
  j["calib_sha256"] = meta.calib_sha256;
  j["tasks_file"] = meta.tasks_file;
  j["tasks_sha256"] = meta.tasks_sha256;
  j["n_tasks"] = tasks.size();
  j["n_ctx"] = r.n_ctx;
  j["chat"] = meta.chat;
  j["protocol"] = protocol_name(meta.question_under_policy);
  j["kv_type"] = meta.kv_type;
  j["threads"] = meta.threads;
  j["decoding"] = "greedy";
  j["seconds"] = r.seconds;
  j["prefill_seconds"] = r.prefill_seconds;
  j["prefills"] = r.n_prefills;
  j["resumed_tasks"] = meta.resumed_tasks;
  if (meta.shards > 0) j["shards"] = meta.shards;
  j["task_builds"] = nlohmann::ordered_json::object();
  for (const auto& [build, n] : meta.task_builds) j["task_builds"][build] = n;
  j["task_kinds"] = t.kinds;
  j["ci95"] =
      "normal approximation over tasks: mean of kind means +- 1.96 sqrt(sum_k s_k^2 / "
      "(K^2 n_k))";
  const TaskScoreTable partial = score_table(tasks, r, true);
  const std::vector<SweepRowStats> st = sweep_row_stats(tasks, r);
  const std::vector<int> ref = sweep_references(entries);
  j["results"] = nlohmann::ordered_json::array();
  for (size_t p = 0; p < entries.size(); ++p) {
    nlohmann::ordered_json e = result_json(entries[p], t, partial, st[p], p);
    if (ref[p] >= 0) {
      e["reference"] = entries[ref[p]].spec;
      e["score_vs_reference"] =
          t.kind_average[ref[p]] > 0.0
              ? nlohmann::ordered_json(t.kind_average[p] / t.kind_average[ref[p]])
              : nlohmann::ordered_json(nullptr);
    }
    j["results"].push_back(e);
  }
  j["items"] = items_json(tasks, entries, r);
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

constexpr const char* kDefinitions =
    "Score = mean over task kinds of the kind's mean score (all-or-nothing per task), +- its "
    "95 % confidence half-width (normal approximation over the tasks of each kind); partial = "
    "the same of RULER's partial credit (the share of a task's answers found; = score for "
    "single-answer metrics); \"vs full\" = score / full's score; \"vs oracle/head\" = score / "
    "the per-head oracle's score at the same budget (`oracle:gqa=per-head`, each query head's "
    "own exact top-B: the reference of selection at that budget). Rows read = distinct K/V rows "
    "read per kv-head group (a row two heads of a group read counts once) / rows cached, "
    "global layers. KV read/token = bytes read per decoded token (selection side data + those "
    "rows). KV resident = the peak over a generation's decode steps of the KV bytes held in RAM "
    "that the policy can still read (cached rows less those it evicted for good, + its side "
    "data), mean over tasks. ms/token = generation time per generated token (sampling "
    "included, the question's steps under --question-under-policy not), summed over the tasks: "
    "time, beside bytes; tasks run side by side (-j) share the machine.\n\n";

std::string md_header(const SweepMeta& meta, const std::vector<Task>& tasks,
                      const TaskScoreTable& t, const TaskRunResult& r) {
  std::string s = fmt::format(
      "# Task sweep\n\nmodel `{}` (sha256 `{}`), tasks `{}` ({} tasks, {} kinds), context {} "
      "tokens, {}greedy; calibration `{}`{}; fasa {}; {:.0f} s{}{}.\n\n",
      report_file_name(meta.model), meta.model_sha256.substr(0, 16),
      report_file_name(meta.tasks_file), tasks.size(), t.kinds.size(), r.n_ctx,
      meta.chat ? "chat, " : "", report_file_name(meta.calib),
      meta.calib_sha256.empty() ? ""
                                : fmt::format(" (sha256 `{}`)", meta.calib_sha256.substr(0, 16)),
      meta.version, r.seconds,
      meta.resumed_tasks > 0
          ? fmt::format(" (resumed: {} of the {} tasks came from the checkpoint)",
                        meta.resumed_tasks, tasks.size())
          : "",
      meta.shards > 0 ? fmt::format(" (summed over {} shards, merged)", meta.shards) : "");
  s += meta.question_under_policy
           ? "Protocol: **question under the policy**: each prompt's context is prefilled "
             "densely; its question (and the chat format's closing tokens) runs token by token "
             "as decode steps under the policy, then the answer is generated.\n\n"
           : "Protocol: **dense prefill**: each whole prompt, its question included, is "
             "prefilled densely; the policy acts from the first generated token.\n\n";
  s += kDefinitions;
  if (meta.task_builds.size() > 1) {
    s += "**Builds mixed** (`--resume-other-build`), tasks run by each:";
    for (const auto& [build, n] : meta.task_builds) s += fmt::format(" {} {};", build, n);
    s.back() = '.';
    s += "\n\n";
  }
  return s;
}

std::string kib(double bytes) { return fmt::format("{:.0f} KiB", bytes / 1024.0); }
std::string mib(double bytes) { return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024.0)); }

std::string ratio(double a, double b) {
  return b > 0.0 ? fmt::format("{:.1f}%", 100.0 * a / b) : std::string("-");
}

}  // namespace

std::string sweep_markdown(const SweepMeta& meta, const std::vector<Task>& tasks,
                           const std::vector<SweepEntry>& entries, const TaskRunResult& r) {
  check_sweep_aligned(tasks, entries, r);
  const TaskScoreTable t = score_table(tasks, r);
  const std::vector<SweepRowStats> st = sweep_row_stats(tasks, r);
  const std::vector<int> ref = sweep_references(entries);
  const bool has_ref = std::any_of(ref.begin(), ref.end(), [](int i) { return i >= 0; });
  std::string s = md_header(meta, tasks, t, r);
  double full = -1.0;
  for (size_t p = 0; p < entries.size(); ++p) {
    if (entries[p].name == "full") full = t.kind_average[p];
  }
  s += fmt::format("| policy | budget | score | partial | vs full |{}",
                   has_ref ? " vs oracle/head |" : "");
  for (const auto& k : t.kinds) s += " " + k + " |";
  s += " rows read | KV read/token | ms/token | KV resident |\n| --- | ---: | ---: | ---: | ---: |";
  s += has_ref ? " ---: |" : "";
  for (size_t k = 0; k < t.kinds.size(); ++k) s += " ---: |";
  s += " ---: | ---: | ---: | ---: |\n";
  for (size_t p = 0; p < entries.size(); ++p) {
    const SweepRowStats& x = st[p];
    s += fmt::format("| {} | {} | {:.3f} ± {:.3f} | {:.3f} | {} |", entries[p].label,
                     budget_text(entries[p].budget), x.score, x.score_ci95, x.partial,
                     ratio(x.score, full));
    if (has_ref) s += fmt::format(" {} |", ref[p] >= 0 ? ratio(x.score, st[ref[p]].score) : "-");
    for (size_t k = 0; k < t.kinds.size(); ++k) s += fmt::format(" {:.2f} |", t.mean[k][p]);
    s += fmt::format(" {:.1f}% | {} | {:.1f} | {} |\n", 100.0 * x.rows_read_fraction,
                     kib(x.kv_bytes_read_per_token), x.decode_ms_per_token,
                     mib(x.kv_resident_bytes));
  }
  return s;
}

}  // namespace fasa
