// Calibrations kept per model: `fasa calibrate` without -o writes
//   $FASA_HOME/calibrations/<model sha256>/<text name>.json
// and a calibrated policy (fasa, double-sparsity, pyramidkv+fasa) given no calib=, or
// calib=auto, takes the newest one stored for its model file. `fasa calib list` lists them.
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

// What a policy's calib= value names: a path as given; "auto" the model's stored calibration.
// Throws fasa::Error for "auto" when none is stored (naming the store and how to make one).
// `policy`: the policy's name, for the message.
std::string resolve_calibration(const std::string& value, const PolicyContext& ctx,
                                const std::string& policy);

// A policy spec with calib=auto (or, for a policy that takes a calibration, no calib= at all)
// replaced by the stored calibration's path; other specs unchanged. A calibrated policy with
// nothing stored keeps its spec (the policy's own error names what to do).
std::string with_stored_calibration(const std::string& spec, const PolicyContext& ctx);

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
