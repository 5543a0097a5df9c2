// What every machine-readable result records so that each number can be traced to its inputs:
// the build (release and git commit) and the sha256 of the model, the text, the calibration and
// the task file it was computed from.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fasa::cli {

// "0.6.0 (<commit>[-dirty])": the release and the commit the binary was built from.
// The kernels this process runs ("avx512, AMX on"): their bits differ between instruction sets
// with AMX and without (AMX tiles for batched matmuls), so results record them.
std::string kernels_text();
std::string version_text();

// sha256 of a file, hex; each path is hashed once per process.
std::string file_sha256(const std::string& path);

// Adds "fasa_version", "model_sha256", and, when the path is not empty, "text_sha256" /
// "calib" + "calib_sha256" (from the spec) / "tasks_sha256" to a result object.
void add_provenance(nlohmann::ordered_json& j, const std::string& model_path,
                    const std::string& policy_spec, const std::string& text_path = "",
                    const std::string& tasks_path = "");

}  // namespace fasa::cli
