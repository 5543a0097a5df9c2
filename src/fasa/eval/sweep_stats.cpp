// The numbers of each sweep setting: scores with confidence intervals, reads, resident bytes,
// and the reference setting (the per-head oracle at the same budget).
#include <algorithm>
#include <map>

#include "fasa/core/error.h"
#include "fasa/eval/confidence.h"
#include "fasa/eval/sweep.h"

namespace fasa {

namespace {

// Setting p's per-task scores (or partial credits) grouped by kind: [n_kinds][tasks of the kind].
std::vector<std::vector<double>> by_kind(const std::vector<Task>& tasks, const TaskRunResult& r,
                                         size_t p, bool partial) {
  std::map<std::string, size_t> index;
  std::vector<std::vector<double>> out;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto [it, added] = index.emplace(tasks[i].task, out.size());
    if (added) out.emplace_back();
    const TaskOutcome& o = r.outcome[i][p];
    out[it->second].push_back(partial ? o.partial : o.score);
  }
  return out;
}

double mean_of_kind_means(const std::vector<std::vector<double>>& kinds) {
  double m = 0.0;
  for (const auto& k : kinds) {
    double s = 0.0;
    for (double x : k) s += x;
    m += s / static_cast<double>(k.size()) / static_cast<double>(kinds.size());
  }
  return m;
}

// Reads (side data + distinct rows per decoded token; the global layers' share of rows) and
// resident bytes (mean and max of the generations' peaks) of setting p.
void reads_and_resident(const TaskRunResult& r, size_t p, SweepRowStats& st) {
  uint64_t bytes = 0, tokens = 0, read = 0, visible = 0, resident_n = 0, generated = 0;
  double resident = 0.0, decode_ms = 0.0;
  for (const auto& row : r.outcome) {
    decode_ms += row[p].decode_ms;
    generated += static_cast<uint64_t>(row[p].n_generated);
    const AttnStats& a = row[p].attn;
    bytes += a.bytes_read();
    tokens += a.decode_tokens;
    read += a.slots_read - a.window_slots;
    visible += a.slots_visible - a.window_slots;
    if (row[p].kv_resident_bytes > 0) {  // 0: not recorded
      resident += static_cast<double>(row[p].kv_resident_bytes);
      resident_n += 1;
      st.kv_resident_bytes_max = std::max(st.kv_resident_bytes_max, row[p].kv_resident_bytes);
    }
  }
  st.kv_bytes_read_per_token = tokens ? static_cast<double>(bytes) / tokens : 0.0;
  st.rows_read_fraction = visible ? static_cast<double>(read) / visible : 1.0;
  st.kv_resident_bytes = resident_n ? resident / resident_n : 0.0;
  st.decode_ms_per_token = generated ? decode_ms / static_cast<double>(generated) : 0.0;
}

}  // namespace

void check_sweep_aligned(const std::vector<Task>& tasks, const std::vector<SweepEntry>& entries,
                         const TaskRunResult& r) {
  bool ok = r.policies.size() == entries.size() && r.outcome.size() == tasks.size();
  for (size_t p = 0; ok && p < entries.size(); ++p) ok = r.policies[p] == entries[p].spec;
  for (size_t i = 0; ok && i < tasks.size(); ++i) ok = r.outcome[i].size() == entries.size();
  if (!ok) fail("sweep report: the results do not match the sweep's settings (internal error)");
}

std::vector<SweepRowStats> sweep_row_stats(const std::vector<Task>& tasks, const TaskRunResult& r) {
  std::vector<SweepRowStats> out(r.policies.size());
  for (size_t p = 0; p < out.size(); ++p) {
    SweepRowStats& st = out[p];
    const auto scores = by_kind(tasks, r, p, false);
    const auto partial = by_kind(tasks, r, p, true);
    st.score = mean_of_kind_means(scores);
    st.score_ci95 = ci95_half_width(scores);
    st.partial = mean_of_kind_means(partial);
    st.partial_ci95 = ci95_half_width(partial);
    reads_and_resident(r, p, st);
  }
  return out;
}

std::vector<int> sweep_references(const std::vector<SweepEntry>& entries) {
  std::vector<int> ref(entries.size(), -1);
  for (size_t p = 0; p < entries.size(); ++p) {
    if (entries[p].budget <= 0.0) continue;
    for (size_t o = 0; o < entries.size(); ++o) {
      if (entries[o].label == "oracle:gqa=per-head" && entries[o].budget == entries[p].budget) {
        ref[p] = static_cast<int>(o);
        break;
      }
    }
  }
  return ref;
}

}  // namespace fasa
