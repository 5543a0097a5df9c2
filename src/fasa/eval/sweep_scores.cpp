#include "fasa/eval/sweep_scores.h"

#include <limits>

#include "fasa/core/error.h"
#include "fasa/eval/confidence.h"
#include "fasa/eval/task_runner.h"
#include "fasa/io/json_read.h"

namespace fasa {

namespace {

// The spec without budget= and, when it is the sweep's --calib, without calib=.
std::string label_of(const std::string& spec, const std::string& calib) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) return spec;
  std::string out = spec.substr(0, colon), opts = spec.substr(colon + 1);
  bool first = true;
  size_t at = 0;
  while (at <= opts.size()) {
    const size_t end = std::min(opts.find(',', at), opts.size());
    const std::string o = opts.substr(at, end - at);
    if (o.rfind("budget=", 0) != 0 && o != "calib=" + calib) {
      out += (first ? ":" : ",") + o;
      first = false;
    }
    at = end + 1;
  }
  return out;
}

}  // namespace

SweepScores read_sweep_scores(const nlohmann::json& doc, const std::string& source) {
  using Json = nlohmann::json;
  const JsonObject<Json> root(doc, source);
  SweepScores r;
  r.source = source;
  r.protocol = root.has("protocol") ? root.string("protocol") : protocol_name(false);
  if (r.protocol != protocol_name(false) && r.protocol != protocol_name(true)) {
    fail("{}: field \"protocol\" must be \"{}\" or \"{}\" (got \"{}\")", source,
         protocol_name(false), protocol_name(true), r.protocol);
  }
  r.model = root.string("model");
  r.model_sha256 = root.string("model_sha256");
  r.calib = root.string("calib");
  r.tasks_file = root.string("tasks_file");
  r.tasks_sha256 = root.string("tasks_sha256");
  r.version = root.string("fasa_version");
  constexpr double kMax = std::numeric_limits<double>::max();
  const Json& results = root.array("results");
  for (size_t i = 0; i < results.size(); ++i) {
    const JsonObject<Json> e = root.element("results", i);
    const std::string spec = e.string("spec");
    r.specs.push_back(spec);
    r.budget[spec] = e.number<double>("budget", 0.0, kMax);
    r.bytes[spec] = e.number<double>("kv_bytes_read_per_token", 0.0, kMax);
    r.label[spec] = label_of(spec, r.calib);
  }
  const Json& items = root.array("items");
  for (size_t i = 0; i < items.size(); ++i) {
    const JsonObject<Json> it = root.element("items", i);
    const std::string id = it.string("id");
    const std::string spec = it.string("spec");
    if (r.budget.count(spec) == 0) {
      fail("{}: item {} has setting '{}', which is not in \"results\"", source, i, spec);
    }
    if (r.kind_of.emplace(id, it.string("task")).second) {
      r.ids.push_back(id);
      bool seen = false;
      for (const auto& k : r.kinds) seen = seen || k == r.kind_of[id];
      if (!seen) r.kinds.push_back(r.kind_of[id]);
    }
    if (!r.score[spec].emplace(id, it.number<double>("score", 0.0, 1.0)).second) {
      fail("{}: task '{}' has two items for setting '{}'", source, id, spec);
    }
  }
  if (r.ids.empty()) fail("{}: no items", source);
  for (const std::string& spec : r.specs) {
    if (r.score[spec].size() != r.ids.size()) {
      fail("{}: setting '{}' has {} items for {} tasks", source, spec, r.score[spec].size(),
           r.ids.size());
    }
  }
  return r;
}

KindMean kind_mean(const SweepScores& s, const std::map<std::string, double>& value) {
  std::vector<std::vector<double>> by_kind(s.kinds.size());
  for (const std::string& id : s.ids) {
    for (size_t k = 0; k < s.kinds.size(); ++k) {
      if (s.kinds[k] == s.kind_of.at(id)) by_kind[k].push_back(value.at(id));
    }
  }
  KindMean m;
  for (const auto& v : by_kind) {
    double sum = 0.0;
    for (double x : v) sum += x;
    m.by_kind.push_back(sum / static_cast<double>(v.size()));
    m.mean += m.by_kind.back() / static_cast<double>(by_kind.size());
  }
  m.ci95 = ci95_half_width(by_kind);
  return m;
}

}  // namespace fasa
