// Model hyper-parameters, read from GGUF metadata at run time (no compile-time configs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fasa/kernels/ops.h"
#include "fasa/model/arch.h"
#include "fasa/model/rope.h"

namespace fasa {

class GgufFile;

struct ModelConfig {
  std::string arch;            // general.architecture, e.g. "llama"
  Arch arch_id = Arch::Llama;  // the same, parsed (its row: arch_info(arch_id))
  std::string name;            // general.name (may be empty)
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int d_model = 0;
  int d_ff = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;  // context length the model was trained for
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  int rope_dim = 0;  // dims that rotate (<= head_dim)
  // RoPE scaling the metadata declares (none, linear, YaRN, LongRoPE); the per-pair factor
  // tables are tensors (ModelWeights::rope_factors). model/rope.h turns both into the
  // frequencies a run uses.
  RopeScaling rope_scaling;
  RopeLayout rope_layout = RopeLayout::Norm;
  bool tied_output = false;    // output matrix is token_embd
  bool qkv_bias = false;       // Q, K and V projections add a bias (qwen2)
  bool fused_qkv = false;      // one attn_qkv matrix holds Q, K and V rows (phi3)
  bool fused_gate_up = false;  // ffn_up holds the gate rows then the up rows (phi3)
  // Gemma-style blocks (gemma3); the llama defaults leave them off.
  float embd_scale = 1.0f;  // token embeddings are multiplied by this (gemma3: sqrt(d_model))
  bool qk_norm = false;     // RMSNorm of every Q and K head ([head_dim] weights) before RoPE
                            // (gemma3, qwen3)
  bool post_norms = false;  // RMSNorm of the attention and FFN outputs before the residual add
  FfnAct ffn_act = FfnAct::Silu;
  // Softmax scale of q.k. 1/sqrt(head_dim) unless the architecture says otherwise (gemma3 27B:
  // 1/sqrt(d_model / n_heads)); the forward folds any difference into q.
  float attn_scale = 0.0f;
  float final_logit_softcap = 0.0f;  // logits = c * tanh(logits / c) when > 0
  // Sliding-window attention: layer_window[l] > 0 is the window (a query at position p sees
  // positions (p - window, p]); 0 is a global layer. Empty = every layer global.
  std::vector<int> layer_window;  // [n_layers]
  float rope_base_local = 0.0f;   // RoPE base of sliding-window layers (unscaled)

  bool windowed(int layer) const { return !layer_window.empty() && layer_window[layer] > 0; }
  int n_windowed_layers() const;

  int n_group() const { return n_heads / n_kv_heads; }  // query heads per kv head
  // The longest context a run may use: the trained context, or with YaRN the original context
  // times the factor when that is longer (Qwen2.5 files say 32768 and scale it to 131072).
  int n_ctx_max() const;

  // Reads and validates the config of a supported architecture; throws fasa::Error naming the
  // key or the architecture otherwise.
  static ModelConfig from_gguf(const GgufFile& file);
};

}  // namespace fasa
