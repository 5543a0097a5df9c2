#include "fasa/eval/paired.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/eval/report_names.h"

namespace fasa {

namespace {

// Label -> its settings ([spec]) in the sweep's order.
std::vector<std::string> settings_of(const SweepScores& s, const std::string& label) {
  std::vector<std::string> out;
  for (const std::string& spec : s.specs) {
    if (s.label.at(spec) == label) out.push_back(spec);
  }
  if (out.empty()) {
    std::vector<std::string> labels;
    for (const std::string& spec : s.specs) {
      if (std::find(labels.begin(), labels.end(), s.label.at(spec)) == labels.end()) {
        labels.push_back(s.label.at(spec));
      }
    }
    std::string known;
    for (const auto& l : labels) known += (known.empty() ? "" : ", ") + l;
    fail("{}: no setting labelled '{}' (its labels: {})", s.source, label, known);
  }
  return out;
}

PairedRow pair(const SweepScores& s, const std::string& a, const std::string& b) {
  PairedRow r;
  r.a_spec = a;
  r.b_spec = b;
  r.budget = s.budget.at(a) > 0.0 ? s.budget.at(a) : s.budget.at(b);
  r.a_bytes = s.bytes.at(a);
  r.b_bytes = s.bytes.at(b);
  std::map<std::string, double> diff;
  for (const std::string& id : s.ids) {
    diff[id] = s.score.at(a).at(id) - s.score.at(b).at(id);
    r.a_wins += diff[id] > 0.0 ? 1 : 0;
    r.b_wins += diff[id] < 0.0 ? 1 : 0;
  }
  const KindMean m = kind_mean(s, diff);
  r.diff = m.mean;
  r.diff_ci95 = m.ci95;
  r.kind_diff = m.by_kind;
  r.a = kind_mean(s, s.score.at(a)).mean;
  r.b = kind_mean(s, s.score.at(b)).mean;
  r.p_sign = sign_test_p(r.a_wins, r.b_wins);
  return r;
}

std::string budget_text(double b) { return b <= 0.0 ? "-" : fmt::format("{:g}", b); }

}  // namespace

double sign_test_p(int wins, int losses) {
  const int n = wins + losses;
  if (n == 0) return 1.0;
  const int k = std::min(wins, losses);
  // sum_{i <= k} C(n, i) / 2^n, in logs (n may be in the hundreds).
  double tail = 0.0;
  for (int i = 0; i <= k; ++i) {
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) -
                     n * std::log(2.0));
  }
  return std::min(1.0, 2.0 * tail);
}

std::vector<PairedRow> paired_rows(const SweepScores& s, const std::string& a,
                                   const std::string& b) {
  const std::vector<std::string> as = settings_of(s, a), bs = settings_of(s, b);
  std::vector<PairedRow> rows;
  for (const std::string& x : as) {
    for (const std::string& y : bs) {
      const double bx = s.budget.at(x), by = s.budget.at(y);
      if (bx == by || bx <= 0.0 || by <= 0.0) rows.push_back(pair(s, x, y));
    }
  }
  if (rows.empty()) fail("{}: '{}' and '{}' share no budget", s.source, a, b);
  return rows;
}

std::string paired_markdown(const SweepScores& s, const std::string& a, const std::string& b,
                            const std::vector<PairedRow>& rows) {
  std::string out = fmt::format(
      "# {} against {}\n\nsweep `{}`: model `{}` (sha256 `{}`), tasks `{}` ({} tasks, {} kinds), "
      "protocol {}, fasa {}.\n\n",
      a, b, s.source, report_file_name(s.model), s.model_sha256.substr(0, 16),
      report_file_name(s.tasks_file), s.ids.size(), s.kinds.size(), s.protocol, s.version);
  out +=
      "A − B = the mean of the kinds' mean per-task differences, paired over the same tasks, with "
      "its 95 % interval (normal approximation); wins = tasks one scored higher; p = two-sided "
      "exact sign test on those wins (McNemar's exact test for 0/1 scores). KV read/token = bytes "
      "read per decoded token.\n\n";
  out += "| budget | A | B | A − B | 95 % interval | A wins | B wins | p |";
  for (const auto& k : s.kinds) out += " Δ " + k + " |";
  out += " KV read/token A | B |\n| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |";
  for (size_t k = 0; k < s.kinds.size(); ++k) out += " ---: |";
  out += " ---: | ---: |\n";
  for (const PairedRow& r : rows) {
    out += fmt::format("| {} | {:.3f} | {:.3f} | {:+.3f} | [{:+.3f}, {:+.3f}] | {} | {} | {:.3g} |",
                       budget_text(r.budget), r.a, r.b, r.diff, r.diff - r.diff_ci95,
                       r.diff + r.diff_ci95, r.a_wins, r.b_wins, r.p_sign);
    for (double x : r.kind_diff) out += fmt::format(" {:+.2f} |", x);
    out += fmt::format(" {:.0f} KiB | {:.0f} KiB |\n", r.a_bytes / 1024.0, r.b_bytes / 1024.0);
  }
  return out;
}

std::string paired_json(const SweepScores& s, const std::string& a, const std::string& b,
                        const std::vector<PairedRow>& rows) {
  nlohmann::ordered_json j;
  j["results"] = s.source;
  j["model_sha256"] = s.model_sha256;
  j["tasks_sha256"] = s.tasks_sha256;
  j["protocol"] = s.protocol;
  j["fasa_version"] = s.version;
  j["a"] = a;
  j["b"] = b;
  j["task_kinds"] = s.kinds;
  j["rows"] = nlohmann::ordered_json::array();
  for (const PairedRow& r : rows) {
    nlohmann::ordered_json e;
    e["budget"] = r.budget;
    e["a_spec"] = r.a_spec;
    e["b_spec"] = r.b_spec;
    e["a"] = r.a;
    e["b"] = r.b;
    e["diff"] = r.diff;
    e["diff_ci95"] = {r.diff - r.diff_ci95, r.diff + r.diff_ci95};
    e["a_wins"] = r.a_wins;
    e["b_wins"] = r.b_wins;
    e["p_sign_test"] = r.p_sign;
    nlohmann::ordered_json k = nlohmann::ordered_json::object();
    for (size_t i = 0; i < s.kinds.size(); ++i) k[s.kinds[i]] = r.kind_diff[i];
    e["diff_by_task"] = k;
    e["a_kv_bytes_read_per_token"] = r.a_bytes;
    e["b_kv_bytes_read_per_token"] = r.b_bytes;
    j["rows"].push_back(e);
  }
  return j.dump(1) + "\n";
}

}  // namespace fasa
