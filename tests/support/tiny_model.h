// Tiny random-weight llama models written by the tests themselves, and a plain scalar
// reference forward pass to check the engine against.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fasa/core/dtype.h"
#include "support/ref/kernels_ref.h"

namespace fasa::test {

struct TinySpec {
  int n_layers = 2;
  int d_model = 64;
  int n_heads = 4;
  int n_kv_heads = 2;
  int d_ff = 96;
  int n_vocab = 320;
  int n_ctx = 256;
  float rope_base = 10000.0f;
  std::string rope_scaling;  // rope.scaling.type to write ("" = none written)
  float rope_factor = 0.0f;  // rope.scaling.factor (written when > 0)
  DType wtype = DType::F32;  // type of the 2-D matrices (F32, F16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K)
  // Q4_K_M-like mixes: when set, attn_v and ffn_down use this type instead (e.g. Q6_K).
  std::optional<DType> wtype_mixed;
  bool tied_output = false;
  // Also write a byte-level BPE tokenizer (gpt2, no merges: one token per byte; token 0 is
  // <|endoftext|>, BOS and EOS; n_vocab must be >= 257), so commands that encode text run.
  bool byte_tokenizer = false;
  uint32_t seed = 1;
  // gemma3 only (arch = "gemma3"): QK-norm, post-norms, GeGLU, scaled embeddings, and
  // sliding-window layers. Keys are written when set (> 0).
  int sliding_window = 0;     // attention.sliding_window
  int window_pattern = 0;     // attention.sliding_window_pattern (period)
  float rope_base_local = 0;  // rope.freq_base_swa
  // Malformed variants for bad-input tests.
  std::string arch = "llama";
  std::string omit_tensor;        // leave this tensor out
  std::string i32_tensor;         // store this tensor as I32 (a type no kernel computes with)
  std::string transposed_tensor;  // store this 2-D tensor with its dims swapped
  std::string extra_tensor;       // also store an f32 [8] tensor of this name (strict-loader tests;
                                  // "rope_freqs.weight" fits the default head_dim 16: 8 pairs)
  float extra_value = 1.0f;       // its elements
  std::string extra_key;  // also store "{arch}.{extra_key}" = 1 as u32 (strict-loader tests)
};

// n token ids drawn uniformly from [0, n_vocab) by a seeded generator.
std::vector<int32_t> random_tokens(int n, int n_vocab, uint32_t seed);

// Writes the model to `path` (GGUF v3, arch spec.arch, tokenizer metadata only with
// spec.byte_tokenizer).
void write_tiny_model(const std::string& path, const TinySpec& spec);

// Scalar reference forward over the whole sequence (dense causal attention, double accumulators,
// matmuls by ref::matmul, so 32-block quants see 8-bit activations like the engine), reading the
// GGUF on its own. neox: use NEOX RoPE pairs instead of NORM; f16_kv: round K and V to f16 as an
// f16 cache does. gemma3 files get gemma3's block, and their sliding-window layers mask every
// key more than window - 1 positions back (over the full sequence: no ring).
// Returns logits [n_tok, n_vocab].
std::vector<float> reference_forward(const std::string& path, const std::vector<int32_t>& tokens,
                                     bool neox, bool f16_kv = false);

}  // namespace fasa::test
