#include "fasa/eval/task_json.h"

#include <map>
#include <string>
#include <utility>

namespace fasa {

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
