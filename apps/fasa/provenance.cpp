#include "provenance.h"

#include <map>
#include <mutex>

#include "fasa/core/amx.h"
#include "fasa/core/isa.h"
#include "fasa/core/sha256.h"
#include "fasa/eval/task_json.h"

const char* fasa_version_text();  // generated at build time (cmake/git_commit.cmake)

namespace fasa::cli {

std::string version_text() { return fasa_version_text(); }

std::string kernels_text() { return std::string(isa_name(active_isa())) + ", AMX " + amx_status(); }

std::string file_sha256(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::string> done;
  std::lock_guard<std::mutex> lock(mu);
  auto it = done.find(path);
  if (it == done.end()) it = done.emplace(path, sha256_file_hex(path)).first;
  return it->second;
}

void add_provenance(nlohmann::ordered_json& j, const std::string& model_path,
                    const std::string& policy_spec, const std::string& text_path,
                    const std::string& tasks_path) {
  j["fasa_version"] = version_text();
  j["kernels"] = kernels_text();
  j["model_sha256"] = file_sha256(model_path);
  if (!text_path.empty()) j["text_sha256"] = file_sha256(text_path);
  if (!tasks_path.empty()) j["tasks_sha256"] = file_sha256(tasks_path);
  if (!policy_spec.empty()) add_calibration_json(j, policy_spec, true);
}

}  // namespace fasa::cli
