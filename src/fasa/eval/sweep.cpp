#include "fasa/eval/sweep.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/attention/policy.h"
#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/eval/line_plot.h"

namespace fasa {

namespace {

bool reads_calibration(const std::string& name) {
  return name == "fasa" || name == "double-sparsity" ||
         (name.size() > 5 && name.compare(name.size() - 5, 5, "+fasa") == 0);
}

std::string budget_text(double b) { return b <= 0.0 ? "-" : fmt::format("{:g}", b); }

// Mean KV bytes read per decoded token (policy side data + selected rows), and the share of
// the global layers' cached rows read, over every generation of policy p.
std::pair<double, double> reads(const TaskRunResult& r, size_t p) {
  uint64_t bytes = 0, tokens = 0, read = 0, visible = 0;
  for (const auto& row : r.outcome) {
    const AttnStats& a = row[p].attn;
    bytes += a.bytes_read();
    tokens += a.decode_tokens;
    read += a.slots_read - a.window_slots;
    visible += a.slots_visible - a.window_slots;
  }
  return {tokens ? static_cast<double>(bytes) / tokens : 0.0,
          visible ? static_cast<double>(read) / visible : 1.0};
}

void check_aligned(const std::vector<Task>& tasks, const std::vector<SweepEntry>& entries,
                   const TaskRunResult& r) {
  bool ok = r.policies.size() == entries.size() && r.outcome.size() == tasks.size();
  for (size_t p = 0; ok && p < entries.size(); ++p) ok = r.policies[p] == entries[p].spec;
  for (size_t i = 0; ok && i < tasks.size(); ++i) ok = r.outcome[i].size() == entries.size();
  if (!ok) fail("sweep report: the results do not match the sweep's settings (internal error)");
}

}  // namespace

std::vector<SweepEntry> sweep_entries(const std::vector<std::string>& policies,
                                      const std::vector<std::string>& budgets,
                                      const std::string& calib) {
  if (policies.empty()) fail("--policies is empty");
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
nlohmann::ordered_json result_json(const SweepMeta& meta, const SweepEntry& entry,
                                   const TaskScoreTable& t, const TaskRunResult& r, size_t p) {
  nlohmann::ordered_json e;
  e["policy"] = entry.name;
  e["budget"] = entry.budget;
  e["spec"] = entry.spec;
  // A policy given its own calibration (spec calib=, besides --calib) records that file's hash.
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(entry.spec, &name, &opts);
  if (const auto c = opts.find("calib"); c != opts.end() && c->second != meta.calib) {
    e["calib_sha256"] = sha256_file_hex(c->second);
  }
  e["score"] = t.kind_average[p];
  e["score_all_tasks"] = t.overall[p];
  nlohmann::ordered_json by;
  for (size_t k = 0; k < t.kinds.size(); ++k) by[t.kinds[k]] = t.mean[k][p];
  e["by_task"] = by;
  const auto [bytes, frac] = reads(r, p);
  e["kv_bytes_read_per_token"] = bytes;
  e["rows_read_fraction"] = frac;
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
      it["score"] = o.score;
      it["n_generated"] = o.n_generated;
      it["output"] = o.output;
      items.push_back(it);
    }
  }
  return items;
}

}  // namespace

std::string sweep_json(const SweepMeta& meta, const std::vector<Task>& tasks,
                       const std::vector<SweepEntry>& entries, const TaskRunResult& r) {
  check_aligned(tasks, entries, r);
  const TaskScoreTable t = score_table(tasks, r);
  nlohmann::ordered_json j;
  j["fasa_version"] = meta.version;
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
  j["kv_type"] = meta.kv_type;
  j["threads"] = meta.threads;
  j["decoding"] = "greedy";
  j["seconds"] = r.seconds;
  j["prefill_seconds"] = r.prefill_seconds;
  j["prefills"] = r.n_prefills;
  j["resumed_tasks"] = meta.resumed_tasks;
  j["task_builds"] = nlohmann::ordered_json::object();
  for (const auto& [build, n] : meta.task_builds) j["task_builds"][build] = n;
  j["task_kinds"] = t.kinds;
  j["results"] = nlohmann::ordered_json::array();
  for (size_t p = 0; p < entries.size(); ++p) {
    j["results"].push_back(result_json(meta, entries[p], t, r, p));
  }
  j["items"] = items_json(tasks, entries, r);
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string sweep_markdown(const SweepMeta& meta, const std::vector<Task>& tasks,
                           const std::vector<SweepEntry>& entries, const TaskRunResult& r) {
  check_aligned(tasks, entries, r);
  const TaskScoreTable t = score_table(tasks, r);
  std::string s = fmt::format(
      "# Task sweep\n\nmodel `{}` (sha256 `{}`), tasks `{}` ({} tasks, {} kinds), context {} "
      "tokens, {}greedy; calibration `{}`; fasa {}; {:.0f} s{}.\n\nScore = mean over task kinds of "
      "the kind's mean score; \"vs full\" = score / full's score; KV/token = bytes read per "
      "decoded token (selection side data + attended rows).\n\n",
      meta.model, meta.model_sha256.substr(0, 16), meta.tasks_file, tasks.size(), t.kinds.size(),
      r.n_ctx, meta.chat ? "chat, " : "", meta.calib.empty() ? "-" : meta.calib, meta.version,
      r.seconds,
      meta.resumed_tasks > 0
          ? fmt::format(" (resumed: {} of the {} tasks came from the checkpoint)",
                        meta.resumed_tasks, tasks.size())
          : "");
  if (meta.task_builds.size() > 1) {
    s += "**Builds mixed** (`--resume-other-build`), tasks run by each:";
    for (const auto& [build, n] : meta.task_builds) s += fmt::format(" {} {};", build, n);
    s.back() = '.';
    s += "\n\n";
  }
  double full = -1.0;
  for (size_t p = 0; p < entries.size(); ++p) {
    if (entries[p].name == "full") full = t.kind_average[p];
  }
  s += "| policy | budget | score | vs full |";
  for (const auto& k : t.kinds) s += " " + k + " |";
  s += " rows read | KV/token |\n| --- | ---: | ---: | ---: |";
  for (size_t k = 0; k < t.kinds.size(); ++k) s += " ---: |";
  s += " ---: | ---: |\n";
  for (size_t p = 0; p < entries.size(); ++p) {
    const auto [bytes, frac] = reads(r, p);
    s += fmt::format("| {} | {} | {:.3f} | {} |", entries[p].label, budget_text(entries[p].budget),
                     t.kind_average[p],
                     full > 0.0 ? fmt::format("{:.1f}%", 100.0 * t.kind_average[p] / full) : "-");
    for (size_t k = 0; k < t.kinds.size(); ++k) s += fmt::format(" {:.2f} |", t.mean[k][p]);
    s += fmt::format(" {:.1f}% | {:.0f} KiB |\n", 100.0 * frac, bytes / 1024.0);
  }
  return s;
}

std::vector<std::pair<std::string, std::string>> sweep_plots(const std::vector<Task>& tasks,
                                                             const std::vector<SweepEntry>& entries,
                                                             const TaskRunResult& r) {
  check_aligned(tasks, entries, r);
  const TaskScoreTable t = score_table(tasks, r);
  auto plot = [&](const std::string& title, auto&& score_of) {
    LinePlot lp;
    lp.title = title;
    lp.x_label = "budget (tokens attended per step per kv-head group)";
    lp.y_label = "score";
    std::map<std::string, size_t> series;
    for (size_t p = 0; p < entries.size(); ++p) {
      if (entries[p].budget <= 0.0) {
        lp.references.push_back({entries[p].label, score_of(p)});
        continue;
      }
      if (entries[p].budget < 1.0) continue;  // a fraction shares no x axis with token budgets
      auto [it, added] = series.emplace(entries[p].label, lp.series.size());
      if (added) lp.series.push_back({it->first, {}, {}});
      lp.series[it->second].x.push_back(entries[p].budget);
      lp.series[it->second].y.push_back(score_of(p));
    }
    for (auto& se : lp.series) {  // increasing budgets
      std::vector<size_t> idx(se.x.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return se.x[a] < se.x[b]; });
      PlotSeries sorted{se.name, {}, {}};
      for (size_t i : idx) {
        sorted.x.push_back(se.x[i]);
        sorted.y.push_back(se.y[i]);
      }
      se = std::move(sorted);
    }
    return line_plot_svg(lp);
  };
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("score_vs_budget.svg",
                   plot("mean score over task kinds", [&](size_t p) { return t.kind_average[p]; }));
  for (size_t k = 0; k < t.kinds.size(); ++k) {
    std::string file = t.kinds[k];  // a file-name-safe form of the kind
    for (char& c : file) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
      if (!ok) c = '_';
    }
    out.emplace_back("score_vs_budget_" + file + ".svg",
                     plot(t.kinds[k], [&](size_t p) { return t.mean[k][p]; }));
  }
  return out;
}

}  // namespace fasa
