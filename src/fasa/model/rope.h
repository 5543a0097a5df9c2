// RoPE as the model file defines it, in one place that the forward pass, the calibration and
// `fasa inspect` share: the scaling the metadata declares (none, linear, YaRN, LongRoPE) and the
// per-pair frequency factors a file may carry (llama3's `rope_freqs.weight`, Phi-3's
// `rope_factors_long/short.weight`), reduced to what a run really uses: one angular frequency per
// rotated pair (radians per position) and one magnitude factor on the rotated dims.
//
// The formulas follow llama.cpp (the reference the goldens come from), pair i of rope_dim / 2:
//   base frequency      f_i = base^(-2i / rope_dim) / factor_i   (factor_i = 1 without a table)
//   linear              f_i * s                                  (s = 1 / rope.scaling.factor)
//   YaRN                f_i * (s * (1 - r_i) + r_i), r_i = 1 - clamp((i - lo) / max(0.001, hi - lo))
//                       lo = floor(d(beta_fast)), hi = ceil(d(beta_slow)) clamped to [0, rope_dim - 1],
//                       d(b) = rope_dim * ln(n_ctx_orig / (2 pi b)) / (2 ln base);
//                       magnitude (1 + 0.1 ln(1 / s)) on the rotated dims of q and k
//   LongRoPE            the long factors when the run's context (n_ctx per sequence) exceeds
//                       rope.scaling.original_context_length, else the short ones
//   every type          magnitude times rope.scaling.attn_factor (1 when absent)
#pragma once

#include <string>
#include <vector>

namespace fasa {

class GgufFile;

enum class RopeScalingType { None, Linear, Yarn, LongRope };
const char* rope_scaling_name(RopeScalingType t);  // "none" | "linear" | "yarn" | "longrope"

// What the metadata declares (ModelConfig::rope_scaling); the factor tables are tensors and live
// in ModelWeights (RopeFactorTables).
struct RopeScaling {
  RopeScalingType type = RopeScalingType::None;
  float freq_scale = 1.0f;   // 1 / rope.scaling.factor (1 without)
  int n_ctx_orig = 0;        // rope.scaling.original_context_length, else context_length
  float attn_factor = 1.0f;  // rope.scaling.attn_factor
  float beta_fast = 32.0f;   // YaRN ramp ends (llama.cpp's defaults; other values are refused)
  float beta_slow = 1.0f;
};

// Reads {arch}.rope.scaling.* (and the older rope.scale_linear). Keys whose values would change
// the math in a way this engine does not implement are refused by name.
RopeScaling read_rope_scaling(const GgufFile& f, const std::string& arch, int n_ctx_train);

// Per-pair factor tables bound from the file (each [rope_dim / 2] or null).
struct RopeFactorTables {
  const float* freq_factors = nullptr;   // rope_freqs.weight (llama3)
  const float* long_factors = nullptr;   // rope_factors_long.weight (Phi-3 LongRoPE)
  const float* short_factors = nullptr;  // rope_factors_short.weight
};

// The rotation one run uses.
struct RopeTable {
  std::vector<float> freqs;  // [rope_dim / 2] angular frequency of each pair (radians / position)
  float mscale = 1.0f;       // multiplies the rotated dims of q and k
  std::string factors;       // which factor table was applied: "", "rope_freqs", "long", "short"
};

// llama.cpp's LongRoPE rule: a run whose context (KV capacity per sequence) exceeds the original
// context rotates with the long factors, any other with the short ones.
inline bool long_rope_factors(const RopeScaling& s, int n_ctx) { return n_ctx > s.n_ctx_orig; }

// The table of a run (`long_factors`: see long_rope_factors; only LongRoPE files differ). `base`
// is the layer's RoPE base (sliding-window layers of gemma3 pass their own and no scaling:
// `scaled` false).
RopeTable make_rope_table(float base, int rope_dim, const RopeScaling& s,
                          const RopeFactorTables& tables, bool long_factors, bool scaled = true);

}  // namespace fasa
