// A finished sweep's results.json as the comparisons read it (`fasa eval protocols`, `fasa eval
// paired`): its identity, its settings and every task's score under each.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fasa {

struct SweepScores {
  std::string source;  // where it was read from (named in errors and reports)
  std::string protocol, model, model_sha256, calib, tasks_file, tasks_sha256, version;
  std::vector<std::string> ids;                // [n_tasks] in file order
  std::vector<std::string> kinds;              // [n_kinds] in order of first appearance
  std::map<std::string, std::string> kind_of;  // task id -> kind
  std::vector<std::string> specs;              // [n_settings] in the sweep's order
  std::map<std::string, double> budget;        // spec -> budget (0: none)
  std::map<std::string, double> bytes;         // spec -> KV bytes read per decoded token
  std::map<std::string, std::string> label;    // spec -> label: without budget= and --calib's
                                               // calib= (as the sweep's table names rows)
  std::map<std::string, std::map<std::string, double>> score;  // spec -> task id -> score
};

// Throws fasa::Error naming `source` and the field: a document that is not a sweep's results, a
// setting without an item for every task, an unknown protocol. A results.json written before
// the protocol was recorded ran the dense-prefill protocol.
SweepScores read_sweep_scores(const nlohmann::json& doc, const std::string& source);

// The mean of the kinds' means of per-task values ([task id] -> value) and its 95 % half-width
// (ci95_half_width over the kinds), the sweep's own score statistic.
struct KindMean {
  double mean = 0.0, ci95 = 0.0;
  std::vector<double> by_kind;  // [n_kinds]
};
KindMean kind_mean(const SweepScores& s, const std::map<std::string, double>& value);

}  // namespace fasa
