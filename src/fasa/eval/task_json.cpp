#include "fasa/eval/task_json.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "fasa/attention/calibration_store.h"
#include "fasa/attention/policy.h"
#include "fasa/core/parallel.h"
#include "fasa/core/process.h"
#include "fasa/core/sha256.h"

namespace fasa {

std::string spec_calibration(const std::string& spec) {
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  const auto it = opts.find("calib");
  return it == opts.end() ? std::string() : it->second;
}

void add_calibration_json(nlohmann::ordered_json& j, const std::string& spec, bool path) {
  const std::string kind = calibration_kind(spec);
  if (kind.empty()) return;
  j["calibration"] = kind;
  if (kind == "online") return;
  const std::string calib = spec_calibration(spec);
  if (path) j["calib"] = calib;
  j["calib_sha256"] = sha256_file_hex(calib);
}

nlohmann::ordered_json kind_means_json(const TaskScoreTable& t, size_t p) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (size_t k = 0; k < t.kinds.size(); ++k) out[t.kinds[k]] = t.mean[k][p];
  return out;
}

double LosslessTotals::tokens_per_s() const {
  return static_cast<double>(tokens) * 1000.0 / std::max(decode_ms, 1e-9);
}

LosslessTotals lossless_totals(const TaskRunResult& r, size_t p) {
  LosslessTotals t;
  for (const auto& per_policy : r.outcome) {
    t.st += per_policy[p].lossless;
    t.decode_ms += per_policy[p].decode_ms;
    t.tokens += per_policy[p].n_generated;
  }
  return t;
}

nlohmann::ordered_json task_results_json(const std::vector<Task>& tasks, const TaskRunResult& r,
                                         bool lossless) {
  const TaskScoreTable t = score_table(tasks, r);
  const TaskScoreTable pc = score_table(tasks, r, true);
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (size_t p = 0; p < r.policies.size(); ++p) {
    nlohmann::ordered_json e;
    e["policy"] = r.policies[p];
    add_calibration_json(e, r.policies[p], false);
    e["score"] = t.overall[p];
    e["mean_of_kinds"] = t.kind_average[p];
    e["partial"] = pc.overall[p];
    e["partial_mean_of_kinds"] = pc.kind_average[p];
    e["by_task"] = kind_means_json(t, p);
    e["partial_by_task"] = kind_means_json(pc, p);
    const nlohmann::ordered_json norm = acc_norm_by_kind(tasks, r, p);
    if (!norm.empty()) e["acc_norm_by_task"] = norm;
    const LosslessTotals lt = lossless_totals(r, p);
    e["decode_tokens_per_s"] = lt.tokens_per_s();
    if (lossless) {
      e["lossless"] = {{"verifications", lt.st.verifications},
                       {"drafted", lt.st.drafted},
                       {"accepted", lt.st.accepted},
                       {"acceptance", lt.st.acceptance()},
                       {"tokens_per_verification", lt.st.tokens_per_verification()},
                       {"kv_bytes_per_token", lt.st.kv_bytes_per_token()}};
    }
    results.push_back(e);
  }
  return results;
}

nlohmann::ordered_json ppl_result_json(const std::string& model_path, const std::string& text,
                                       const std::string& kv_type, const PplOptions& o,
                                       const PplResult& r) {
  nlohmann::ordered_json j;
  j["model"] = model_path;
  j["text"] = text;
  j["policy"] = r.policy;
  j["kv_type"] = kv_type;
  j["n_ctx"] = o.n_ctx;
  j["n_decode"] = o.n_decode;
  j["n_chunks"] = r.n_chunks;
  j["n_tokens"] = r.n_tokens;
  j["n_scored"] = r.n_scored;
  j["ppl"] = r.ppl;
  j["ppl_se"] = r.ppl_se;
  j["mean_nll"] = r.mean_nll;
  j["chunk_ppl"] = r.chunk_ppl;
  // Over the policy-driven (global) layers: sliding-window layers always read their window.
  j["decode_rows_read_fraction"] = r.attn.global_read_fraction();
  if (r.attn.decode_tokens > 0) {  // --decode: KV bytes per decoded token, as sweeps count them
    const double n = static_cast<double>(r.attn.decode_tokens);
    j["decode_kv_bytes_read_per_token"] = static_cast<double>(r.attn.bytes_read()) / n;
    j["dense_kv_bytes_read_per_token"] = static_cast<double>(r.attn.dense_bytes) / n;
  }
  j["seconds"] = r.seconds;
  j["threads"] = num_threads();
  j["peak_rss_bytes"] = peak_rss_bytes();
  return j;
}

nlohmann::ordered_json acc_norm_by_kind(const std::vector<Task>& tasks, const TaskRunResult& r,
                                        size_t p) {
  std::vector<std::string> kinds;
  std::map<std::string, std::pair<double, int>> sum;  // kind -> (sum, count)
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].metric != TaskMetric::Choice) continue;
    auto [it, added] = sum.emplace(tasks[i].task, std::make_pair(0.0, 0));
    if (added) kinds.push_back(tasks[i].task);
    it->second.first += r.outcome[i][p].acc_norm;
    it->second.second += 1;
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const std::string& k : kinds) out[k] = sum[k].first / sum[k].second;
  return out;
}

nlohmann::ordered_json task_items_json(const std::vector<Task>& tasks, const TaskRunResult& r) {
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  for (size_t i = 0; i < tasks.size(); ++i) {
    for (size_t p = 0; p < r.policies.size(); ++p) {
      const TaskOutcome& oc = r.outcome[i][p];
      nlohmann::ordered_json it;
      it["id"] = tasks[i].id;
      it["task"] = tasks[i].task;
      it["policy"] = r.policies[p];
      it["n_prompt"] = r.n_prompt[i];
      if (i < r.n_question.size() && r.n_question[i] > 0) it["n_question"] = r.n_question[i];
      it["metric"] = metric_name(tasks[i].metric);
      it["score"] = oc.score;
      it["partial"] = oc.partial;
      it["output"] = oc.output;
      if (tasks[i].metric == TaskMetric::Choice) {
        it["acc_norm"] = oc.acc_norm;
        it["choice_logprobs"] = oc.choice_logprobs;
      }
      items.push_back(it);
    }
  }
  return items;
}

}  // namespace fasa
