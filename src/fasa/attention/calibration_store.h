// Calibrations kept per model: `fasa calibrate` without -o writes
//   $FASA_HOME/calibrations/<model sha256>/<text name>.json
// and a calibrated policy (fasa, double-sparsity, pyramidkv+fasa) given no calib=, or
// calib=auto, takes the newest one stored for its model file, or calibrates online when none is. `fasa calib list` lists them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fasa/attention/policy.h"

namespace fasa {

// $FASA_HOME/calibrations (core/fasa_home.h).
std::filesystem::path calibration_store_dir();
// Where a calibration of the model with this sha256, made on the text named `text_name` (its
// file name; only [A-Za-z0-9._-] kept, others become '_'), is stored.
std::filesystem::path stored_calibration_path(const std::string& model_sha256,
                                              const std::string& text_name);
// The newest (by modification time, then name) stored calibration of the model, "" if none.
std::string find_stored_calibration(const std::string& model_sha256);
// True when `path` lies in the store (a stored calibration rather than a file given by path).
bool is_stored_calibration(const std::string& path);

// What a policy's calib= value names: a path as given; "online" itself (the policy calibrates
// on its prompt, online_calibrated.h); "auto" the model's newest stored calibration, or
// "online" when none is stored (or the context cannot name the model file). `policy`: the
// policy's name, for the message (an empty value is an error).
std::string resolve_calibration(const std::string& value, const PolicyContext& ctx,
                                const std::string& policy);

// A policy spec with calib=auto (or, for a policy that takes a calibration, no calib= at all)
// replaced by what auto resolves to (the stored calibration's path, or online); other specs
// unchanged.
std::string with_stored_calibration(const std::string& spec, const PolicyContext& ctx);

// How a policy spec's policy is calibrated: "online", "stored" (a file in the store), "file"
// (any other path), or "" (no calib=, or calib=auto not yet resolved).
std::string calibration_kind(const std::string& spec);

struct StoredCalibration {
  std::string path;
  std::string model_sha256;  // the directory's name
  std::string model_name, text_name, text_sha256;
  int version = 0;  // the file's format version (0: the file does not parse)
  int k = 0, samples = 0, tokens = 0, steps = 0, n_compound = 0;
  int64_t mtime_s = 0;  // modification time, unix seconds
  std::string error;    // why the file does not parse ("" when it does)
};
// Every stored calibration, by model directory then newest first.
std::vector<StoredCalibration> list_stored_calibrations();

}  // namespace fasa
