// A FASA calibration: per (layer, query head) the mean Contextual Agreement of every frequency
// chunk, ranked. Stored as versioned JSON bound to the model's identity, RoPE layout, head_dim
// and FC mapping; loading it for anything else is an error, never a silent fallback.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fasa/attention/policy.h"
#include "fasa/calibrate/frequency_chunks.h"

namespace fasa {

class Model;

inline constexpr int kCalibrationVersion = 1;

struct Calibration {
  // Identity of what it was made for.
  std::string model_sha256;  // sha256 of the GGUF file
  std::string model_name;
  std::string arch;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  RopeLayout rope_layout = RopeLayout::Norm;
  FcLayout fc_layout = FcLayout::Rope;
  std::vector<FcDims> fcs;  // [n_fc]
  // How it was made.
  int k = 0;                  // calibration window K (top-K compared)
  int n_samples = 0;
  int tokens_per_sample = 0;  // dense prefill before the decode steps of each sample
  int steps = 0;              // decode-step queries per sample
  std::string text_name;
  std::string text_sha256;
  int64_t text_tokens = 0;
  // Results.
  std::vector<float> mean_ca;   // [n_layers, n_heads, n_fc]
  std::vector<int32_t> ranked;  // [n_layers, n_heads, n_fc] FC ids, highest mean CA first

  int n_fc() const { return static_cast<int>(fcs.size()); }
  const float* ca(int layer, int head) const {
    return mean_ca.data() + (static_cast<size_t>(layer) * n_heads + head) * n_fc();
  }
  const int32_t* rank(int layer, int head) const {
    return ranked.data() + (static_cast<size_t>(layer) * n_heads + head) * n_fc();
  }
  // Fills `ranked` from `mean_ca` (ties by the lower FC id).
  void rank_all();
};

// sha256 of the model file (the identity a calibration is bound to).
std::string model_identity(const Model& model);

void save_calibration(const Calibration& c, const std::string& path);  // throws on I/O errors
// Parses and validates the file's own consistency (version, sizes, FC mapping).
Calibration load_calibration(const std::string& path);
// Throws fasa::Error naming the mismatch when `c` was not made for the model `ctx` describes
// (architecture, shape, RoPE layout, file identity).
void check_calibration(const Calibration& c, const PolicyContext& ctx, const std::string& path);

}  // namespace fasa
