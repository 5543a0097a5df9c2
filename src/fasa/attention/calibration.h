// A FASA calibration: per (layer, query head) the mean Contextual Agreement of every frequency
// chunk, ranked. Stored as versioned JSON bound to the model's identity, RoPE layout, head_dim
// and FC mapping; loading it for anything else is an error, never a silent fallback.
//
// It covers the model's global (full-attention) layers only: on a hybrid stack (gemma3) the
// sliding-window layers attend over their window and no policy runs there, so they are not
// calibrated. Version 2 files list the covered layers ("layers"); version 1 files, which
// predate hybrid models, covered every layer and still load as such (a hybrid model refuses
// them in check_calibration).
//
// Version 3 adds, per (layer, query head), Double Sparsity's channel importance (Yang et al.,
// arXiv 2408.07092): the mean of |q_c * k_c| per key dim c over the calibration queries, each
// paired with its own token's key (post-RoPE, the authors' offline calibration), measured by the
// same `fasa calibrate` run on the same text. Older files load without it (FASA does not need
// it; `double-sparsity` asks for a new calibration).
//
// Version 4 adds compound Contextual Agreement sets (attention/compound_greedy.h): per (layer,
// query head) and per (layer, kv head) the first n_compound FCs chosen greedily for the agreement
// of their summed logits with the full head (a kv head's over its group's queries together), and
// the mean compound CA of each prefix. Older files load without them (`fcs=compound`,
// `layer_budget=calibrated` ask for a new calibration).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fasa/attention/frequency_chunks.h"
#include "fasa/attention/policy.h"
#include "fasa/core/layer_list.h"

namespace fasa {

inline constexpr int kCalibrationVersion = 4;

struct Calibration {
  // Identity of what it was made for.
  std::string model_sha256;  // sha256 of the GGUF file
  std::string model_name;
  std::string arch;
  int n_layers = 0;  // of the model (covered or not)
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  RopeLayout rope_layout = RopeLayout::Norm;
  FcLayout fc_layout = FcLayout::Rope;
  std::vector<FcDims> fcs;  // [n_fc]
  // The angular frequency (radians per position) the model really rotates each FC at during the
  // calibration run, RoPE scaling and factor tables applied (model/rope.h); empty for the
  // `adjacent` FC layout (its chunks mix two rotation pairs) and in files that predate it.
  std::vector<float> fc_freq;  // [n_fc]
  float rope_mscale = 1.0f;    // the magnitude RoPE applied to q and k (YaRN, LongRoPE)
  int rope_n_ctx = 0;          // context of the calibration run (LongRoPE picks tables by it)
  // How it was made.
  int k = 0;  // calibration window K (top-K compared)
  int n_samples = 0;
  int tokens_per_sample = 0;  // dense prefill before the decode steps of each sample
  int steps = 0;              // decode-step queries per sample
  std::string text_name;
  std::string text_sha256;
  int64_t text_tokens = 0;
  // Results.
  std::vector<int> layers;      // [n_covered] the calibrated (global) layers, ascending
  std::vector<float> mean_ca;   // [n_covered, n_heads, n_fc]
  std::vector<int32_t> ranked;  // [n_covered, n_heads, n_fc] FC ids, highest mean CA first
  // Double Sparsity channel importance (version >= 3; empty for older files).
  std::vector<float> channel_importance;  // [n_covered, n_heads, head_dim]
  // Compound CA sets (version >= 4; n_compound = 0 and empty for older files).
  int n_compound = 0;                    // FCs per compound set
  std::vector<int32_t> compound;         // [n_covered, n_heads, n_compound] FC ids, greedy order
  std::vector<float> compound_ca;        // [n_covered, n_heads, n_compound] CA of each prefix
  std::vector<int32_t> group_compound;   // [n_covered, n_kv_heads, n_compound] a group's set
  std::vector<float> group_compound_ca;  // [n_covered, n_kv_heads, n_compound]

  int n_fc() const { return static_cast<int>(fcs.size()); }
  // Index of `layer` in `layers`, or -1 when the calibration does not cover it.
  int row(int layer) const;
  bool covers(int layer) const { return row(layer) >= 0; }
  // A covered layer's results (aborts for a layer not covered).
  const float* ca(int layer, int head) const {
    return mean_ca.data() + (static_cast<size_t>(covered_row(layer)) * n_heads + head) * n_fc();
  }
  const int32_t* rank(int layer, int head) const {
    return ranked.data() + (static_cast<size_t>(covered_row(layer)) * n_heads + head) * n_fc();
  }
  bool has_channel_importance() const { return !channel_importance.empty(); }
  const float* channels(int layer, int head) const {  // [head_dim]
    return channel_importance.data() +
           (static_cast<size_t>(covered_row(layer)) * n_heads + head) * head_dim;
  }
  bool has_compound() const { return n_compound > 0; }
  // Compound sets: [n_compound] FC ids in greedy order, and the mean compound CA of each prefix.
  const int32_t* compound_fcs(int layer, int head) const {
    return compound.data() + head_row(layer, head, n_heads) * n_compound;
  }
  const float* compound_cas(int layer, int head) const {
    return compound_ca.data() + head_row(layer, head, n_heads) * n_compound;
  }
  const int32_t* group_compound_fcs(int layer, int kv_head) const {
    return group_compound.data() + head_row(layer, kv_head, n_kv_heads) * n_compound;
  }
  const float* group_compound_cas(int layer, int kv_head) const {
    return group_compound_ca.data() + head_row(layer, kv_head, n_kv_heads) * n_compound;
  }
  // The n most important key dims of (layer, head), most important first (ties: the lower dim).
  std::vector<int> heavy_channels(int layer, int head, int n) const;
  // Fills `ranked` from `mean_ca` (ties by the lower FC id).
  void rank_all();

 private:
  int covered_row(int layer) const;
  size_t head_row(int layer, int head, int per_layer) const {
    return static_cast<size_t>(covered_row(layer)) * per_layer + head;
  }
};

// The file's text (JSON, ending in a newline).
std::string calibration_json(const Calibration& c);
// Writes calibration_json(c) crash-safely (io/atomic_file.h); throws fasa::Error on I/O errors.
void save_calibration(const Calibration& c, const std::string& path);
// Parses and validates the file's own consistency (version, every number in its range, sizes,
// FC mapping); throws fasa::Error naming `source` and the field. parse_calibration reads text
// already in memory (`source` names it in errors).
Calibration load_calibration(const std::string& path);
Calibration parse_calibration(std::string_view text, const std::string& source);
// Throws fasa::Error naming the mismatch when `c` was not made for the model `ctx` describes
// (architecture, shape, RoPE layout, covered layers = the model's global layers, file identity).
void check_calibration(const Calibration& c, const PolicyContext& ctx, const std::string& path);

}  // namespace fasa
