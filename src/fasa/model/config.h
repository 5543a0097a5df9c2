// Model hyper-parameters, read from GGUF metadata at run time (no compile-time configs).
#pragma once

#include <cstdint>
#include <string>

#include "fasa/kernels/ops.h"

namespace fasa {

class GgufFile;

struct ModelConfig {
  std::string arch;        // general.architecture, e.g. "llama"
  std::string name;        // general.name (may be empty)
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int d_model = 0;
  int d_ff = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;     // context length the model was trained for
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  int rope_dim = 0;        // dims that rotate (<= head_dim)
  // Linear RoPE scaling (rope.scaling.type = linear): angles are pos * freq * rope_freq_scale,
  // rope_freq_scale = 1 / rope.scaling.factor; 1 without scaling. Other scaling types are refused.
  float rope_freq_scale = 1.0f;
  RopeLayout rope_layout = RopeLayout::Norm;
  bool tied_output = false;  // output matrix is token_embd
  bool qkv_bias = false;     // Q, K and V projections add a bias (qwen2)

  int n_group() const { return n_heads / n_kv_heads; }  // query heads per kv head

  // Reads and validates the config of a supported architecture; throws fasa::Error naming the
  // key or the architecture otherwise.
  static ModelConfig from_gguf(const GgufFile& file);
};


}  // namespace fasa
