// bench: the speed measurements `fasa bench` makes (eval/bench.h), every row the object
// `fasa bench --json` prints, field for field, as one JSON array's text (the Python side loads
// it).
#include <pybind11/stl.h>
#include <nlohmann/json.hpp>

#include "bindings.h"
#include "call_guard.h"
#include "fasa/attention/calibration_store.h"
#include "fasa/eval/bench.h"
#include "fasa/eval/bench_report.h"

namespace fasa::py {

namespace {

using Json = nlohmann::ordered_json;

struct BenchLists {
  std::vector<int> prompts, gens, batches, depths;
  std::vector<std::string> policies;
};

std::string bench(const PyModel& m, const BenchLists& lists, int reps, const std::string& kv_type,
                  const std::string& depth_fill, bool warmup, const std::string& lossless,
                  const Source* text, bool bandwidth, int64_t bandwidth_bytes) {
  BenchSettings s;
  s.tests = bench_tests(lists.prompts, lists.gens, lists.batches);
  s.depths = lists.depths;
  s.reps = reps;
  s.kv_type = kv_type;
  s.depth_fill = depth_fill;
  s.warmup = warmup;
  s.lossless = lossless;
  if (text) s.text = text->bytes;
  s.bandwidth = bandwidth;
  s.bandwidth_bytes = bandwidth_bytes;
  s.policies.clear();  // (the default is {"full"})
  for (const std::string& spec : lists.policies) {
    s.policies.push_back(with_stored_calibration(spec, m.policy_ctx));  // as the CLI resolves
  }
  const BenchResult r = run_bench(m.model, s);
  Json rows = Json::array();
  if (s.tests.empty()) {
    rows.push_back(bandwidth_json(r.bandwidth));
    return rows.dump();
  }
  const BenchReport report(RowFormat::JsonLines, *m.model, s, r.bandwidth,
                           [&m](Json& j, const std::string& policy) {
                             add_provenance(j, m, policy, nullptr, nullptr);
                           });
  for (const BenchMeasure& row : r.rows) rows.push_back(report.json_row(row));
  return rows.dump();
}

}  // namespace

void bind_bench(pb::module_& m) {
  m.def(
      "bench",
      [](const PyModel& model, std::vector<int> prompts, std::vector<int> gens,
         std::vector<int> batches, std::vector<int> depths, std::vector<std::string> policies,
         int reps, const std::string& kv_type, const std::string& depth_fill, bool warmup,
         const std::string& lossless, const Source* text, bool bandwidth, int64_t bandwidth_bytes) {
        const BenchLists lists{std::move(prompts), std::move(gens), std::move(batches),
                               std::move(depths), std::move(policies)};
        return guarded([&](CallGuard&) {  // Ctrl-C stops it (call_guard.h)
          return bench(model, lists, reps, kv_type, depth_fill, warmup, lossless, text, bandwidth,
                       bandwidth_bytes);
        });
      },
      pb::arg("model"), pb::arg("prompts"), pb::arg("gens"), pb::arg("batches"), pb::arg("depths"),
      pb::arg("policies"), pb::arg("reps"), pb::arg("kv_type"), pb::arg("depth_fill"),
      pb::arg("warmup"), pb::arg("lossless"), pb::arg("text").none(true), pb::arg("bandwidth"),
      pb::arg("bandwidth_bytes"));
}

}  // namespace fasa::py
