#include "fasa/server/policy_choice.h"

#include <filesystem>

#include "fasa/attention/calibration_store.h"
#include "fasa/core/error.h"

namespace fasa::server {

std::string shown_spec(const std::string& spec) {
  std::string name;
  PolicyOptions opts;
  try {
    parse_policy_spec(spec, &name, &opts);
  } catch (const Error&) {
    return spec;  // (only checked specs are shown)
  }
  const auto c = opts.find("calib");
  if (c == opts.end()) return spec;
  c->second = std::filesystem::path(c->second).filename().string();
  return policy_spec(name, opts);
}

std::string choose_policy(const PolicyDefaults& defaults, const PolicyRequest& request,
                          const PolicyContext& ctx) {
  std::string name, req_name;
  PolicyOptions opts, req_opts;
  try {
    parse_policy_spec(defaults.spec, &name, &opts);
    if (!request.policy.empty()) parse_policy_spec(request.policy, &req_name, &req_opts);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), "fasa.policy");
  }
  for (const char* key : {"calib", "offload_dir"}) {  // the api layer refuses them as fields
    if (req_opts.count(key)) {
      throw ApiError(400,
                     fmt::format("'{}' cannot be set per request: it names a file on the "
                                 "server (start the server with --{})",
                                 key, key == std::string("calib") ? "calib" : "offload-dir"),
                     "fasa.policy");
    }
  }
  if (!req_name.empty() && req_name != name) {
    name = req_name;
    opts.clear();
    if (!defaults.calib.empty() && policy_takes_calibration(name)) opts["calib"] = defaults.calib;
  }
  for (const auto& [key, value] : req_opts) opts[key] = value;
  for (const auto& [key, value] : request.options) opts[key] = value;
  try {
    // calib=auto (or none) said as what it is: the stored calibration, or online.
    if (policy_takes_calibration(name) && (!opts.count("calib") || opts["calib"] == "auto")) {
      opts["calib"] = resolve_calibration("auto", ctx, name);
    }
    make_policy(name, ctx, opts);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), "fasa");
  }
  return policy_spec(name, opts);
}

}  // namespace fasa::server
