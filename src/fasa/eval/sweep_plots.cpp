// eval sweep's SVG plots: score against budget (overall and per kind) and score against KV bytes
// read per decoded token (the equal-resource view).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "fasa/eval/line_plot.h"
#include "fasa/eval/sweep.h"

namespace fasa {

namespace {

// The series' points in increasing x (their error bars with them).
void sort_by_x(std::vector<PlotSeries>& series) {
  for (auto& se : series) {
    std::vector<size_t> idx(se.x.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return se.x[a] < se.x[b]; });
    PlotSeries sorted{se.name, {}, {}, {}, {}};
    for (size_t i : idx) {
      sorted.x.push_back(se.x[i]);
      sorted.y.push_back(se.y[i]);
      if (!se.err.empty()) sorted.err.push_back(se.err[i]);
      if (!se.labels.empty()) sorted.labels.push_back(se.labels[i]);
    }
    se = std::move(sorted);
  }
}

// Adds point (x, y, err) to the series named `label` (made on first use).
void add_point(LinePlot& lp, std::map<std::string, size_t>& series, const std::string& label,
               double x, double y, double err) {
  auto [it, added] = series.emplace(label, lp.series.size());
  if (added) lp.series.push_back({it->first, {}, {}, {}, {}});
  PlotSeries& se = lp.series[it->second];
  se.x.push_back(x);
  se.y.push_back(y);
  se.err.push_back(err);
}

// Score against budget (log-2 axis): one line per label; a setting without a budget (full) is
// a reference, a dashed line drawn over the series.
template <typename ScoreOf>
LinePlot budget_plot(const std::string& title, const std::vector<SweepEntry>& entries,
                     ScoreOf&& score_of) {
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
    add_point(lp, series, entries[p].label, entries[p].budget, score_of(p), 0.0);
  }
  for (auto& se : lp.series) se.err.clear();
  sort_by_x(lp.series);
  return lp;
}

// Score against KV bytes read per decoded token: every setting is a point (fractions of the
// context too), labelled with its budget, one line per label, 95 % CIs as error bars; a setting
// without a budget (full) is a reference: a dashed line at its score through its own point.
LinePlot bytes_plot(const std::vector<SweepEntry>& entries, const std::vector<SweepRowStats>& st) {
  LinePlot lp;
  lp.title = "mean score over task kinds against KV bytes read (95 % CI over tasks)";
  lp.x_label = "KV bytes read per decoded token (side data + distinct rows; log scale)";
  lp.y_label = "score";
  lp.x_bytes = true;
  lp.note = "point labels: budget";
  std::map<std::string, size_t> series;
  for (size_t p = 0; p < entries.size(); ++p) {
    const double bytes = st[p].kv_bytes_read_per_token;
    if (!(bytes > 0.0)) continue;  // no decode step: nothing read
    if (entries[p].budget <= 0.0) {
      lp.references.push_back({entries[p].label, st[p].score, bytes, st[p].score_ci95});
      continue;
    }
    add_point(lp, series, entries[p].label, bytes, st[p].score, st[p].score_ci95);
    lp.series[series.at(entries[p].label)].labels.push_back(fmt::format("{:g}", entries[p].budget));
  }
  sort_by_x(lp.series);
  return lp;
}

// A file-name-safe form of a task kind.
std::string file_safe(std::string s) {
  for (char& c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) c = '_';
  }
  return s;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> sweep_plots(const std::vector<Task>& tasks,
                                                             const std::vector<SweepEntry>& entries,
                                                             const TaskRunResult& r) {
  check_sweep_aligned(tasks, entries, r);
  const TaskScoreTable t = score_table(tasks, r);
  std::vector<std::pair<std::string, std::string>> out;
  // A plot with nothing on it (only fractions of the context, no full; nothing decoded) is left
  // out rather than drawn empty.
  auto add = [&](std::string name, const LinePlot& lp) {
    if (!lp.series.empty() || !lp.references.empty()) out.emplace_back(name, line_plot_svg(lp));
  };
  add("score_vs_budget.svg", budget_plot("mean score over task kinds", entries,
                                         [&](size_t p) { return t.kind_average[p]; }));
  for (size_t k = 0; k < t.kinds.size(); ++k) {
    add("score_vs_budget_" + file_safe(t.kinds[k]) + ".svg",
        budget_plot("score on " + t.kinds[k], entries, [&](size_t p) { return t.mean[k][p]; }));
  }
  add("score_vs_bytes.svg", bytes_plot(entries, sweep_row_stats(tasks, r)));
  return out;
}

}  // namespace fasa
