// Model hyper-parameters, read from GGUF metadata at run time (no compile-time configs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fasa/kernels/ops.h"

namespace fasa {

class GgufFile;

enum class FfnAct { Silu, GeluTanh };  // gated feed-forward: act(gate) * up
const char* ffn_act_name(FfnAct a);    // "silu" | "gelu_tanh"

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
  // Gemma-style blocks (gemma3); the llama defaults leave them off.
  float embd_scale = 1.0f;   // token embeddings are multiplied by this (gemma3: sqrt(d_model))
  bool qk_norm = false;      // RMSNorm of every Q and K head ([head_dim] weights) before RoPE
  bool post_norms = false;   // RMSNorm of the attention and FFN outputs before the residual add
  FfnAct ffn_act = FfnAct::Silu;
  // Softmax scale of q.k. 1/sqrt(head_dim) unless the architecture says otherwise (gemma3 27B:
  // 1/sqrt(d_model / n_heads)); the forward folds any difference into q.
  float attn_scale = 0.0f;
  float final_logit_softcap = 0.0f;  // logits = c * tanh(logits / c) when > 0
  // Sliding-window attention: layer_window[l] > 0 is the window (a query at position p sees
  // positions (p - window, p]); 0 is a global layer. Empty = every layer global.
  std::vector<int> layer_window;     // [n_layers]
  float rope_base_local = 0.0f;      // RoPE base of sliding-window layers (unscaled)

  bool windowed(int layer) const {
    return !layer_window.empty() && layer_window[layer] > 0;
  }
  int n_windowed_layers() const;

  int n_group() const { return n_heads / n_kv_heads; }  // query heads per kv head

  // Reads and validates the config of a supported architecture; throws fasa::Error naming the
  // key or the architecture otherwise.
  static ModelConfig from_gguf(const GgufFile& file);
};


}  // namespace fasa
