// Two sweeps of the same tasks side by side, one per protocol (`fasa eval protocols`): for every
// setting both ran, its score with the whole prompt prefilled densely and with the question run
// under the policy (TaskRunOptions::question_under_policy), and the paired difference.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fasa {

// One sweep's results.json, parsed, and where it came from (named in errors and the report).
struct ProtocolSweep {
  nlohmann::json doc;
  std::string source;
};

struct ProtocolRow {
  std::string spec;
  double budget = 0.0;                 // 0: none
  double dense = 0.0, question = 0.0;  // scores: mean of the kinds' means
  double diff = 0.0;                   // question - dense, the mean of kind means of per-task
  double diff_ci95 = 0.0;              // differences, and its 95 % half-width (ci95_half_width)
  int lost = 0, gained = 0;            // tasks scored lower / higher under the question protocol
  std::vector<double> kind_diff;       // [n_kinds] question - dense, per kind
  double dense_bytes = 0.0, question_bytes = 0.0;  // KV bytes read per decoded token
};

struct ProtocolComparison {
  std::string model, model_sha256, tasks_file, tasks_sha256;
  std::string dense_source, question_source, dense_version, question_version;
  int n_tasks = 0;
  std::vector<std::string> kinds;  // [n_kinds] in order of first appearance
  std::vector<ProtocolRow> rows;   // the settings both ran, in the dense sweep's order
};

// Throws fasa::Error naming the file and field: a results.json that is not a sweep's, two sweeps
// of one protocol, another model or task file, tasks that differ, or no setting in common.
// The two may be given in either order.
ProtocolComparison compare_protocols(const ProtocolSweep& a, const ProtocolSweep& b);

std::string protocol_markdown(const ProtocolComparison& c);
std::string protocol_json(const ProtocolComparison& c);

}  // namespace fasa
