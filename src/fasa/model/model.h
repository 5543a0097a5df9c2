// A loaded model: config, weights bound into the GGUF mapping, tokenizer. Immutable after load
// and shared by every sequence (and thread) that runs on it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fasa/core/dtype.h"
#include "fasa/model/config.h"
#include "fasa/model/rope.h"

namespace fasa {

class GgufFile;
class Tokenizer;

// A weight matrix in GGUF layout: n_out rows of n_in contiguous elements of `type`.
struct WeightMatrix {
  DType type = DType::F32;
  const void* data = nullptr;  // [n_out, n_in] (quantized rows)
  int64_t n_out = 0;
  int64_t n_in = 0;
  uint64_t n_bytes = 0;
};

struct LayerWeights {
  const float* attn_norm = nullptr;       // [d_model]
  WeightMatrix wq;                        // [n_heads * head_dim, d_model]
  WeightMatrix wk;                        // [n_kv_heads * head_dim, d_model]
  WeightMatrix wv;                        // [n_kv_heads * head_dim, d_model]
  const float* bq = nullptr;              // [n_heads * head_dim] biases when config.qkv_bias
  const float* bk = nullptr;              // [n_kv_heads * head_dim]
  const float* bv = nullptr;              // [n_kv_heads * head_dim]
  const float* q_norm = nullptr;          // [head_dim] when config.qk_norm (shared by the heads)
  const float* k_norm = nullptr;          // [head_dim]
  WeightMatrix wo;                        // [d_model, n_heads * head_dim]
  const float* attn_post_norm = nullptr;  // [d_model] when config.post_norms
  const float* ffn_norm = nullptr;        // [d_model]
  WeightMatrix w_gate;                    // [d_ff, d_model]
  WeightMatrix w_up;                      // [d_ff, d_model]
  WeightMatrix w_down;                    // [d_model, d_ff]
  const float* ffn_post_norm = nullptr;   // [d_model] when config.post_norms
};

struct ModelWeights {
  WeightMatrix tok_embd;               // [n_vocab, d_model]
  const float* output_norm = nullptr;  // [d_model]
  WeightMatrix output;                 // [n_vocab, d_model] (== tok_embd when tied)
  std::vector<LayerWeights> layers;    // [n_layers]
  RopeFactorTables rope_factors;       // per-pair RoPE factor tables ([rope_dim / 2] each or null)
};

struct LoadOptions {
  // Test hook: run a `llama` file with the NEOX pair layout to exercise that RoPE path.
  std::optional<RopeLayout> rope_layout_override;
  bool load_tokenizer = true;  // when the file has tokenizer metadata
  // Interleave Q4_K / Q6_K projection matrices 16 rows at a time (kernels/repack.h) when the
  // active instruction set is AVX-512: the same bits, faster decode; the copies replace the
  // file's pages in memory. FASA_NO_REPACK=1 in the environment turns it off for every load.
  bool repack = true;
};

class Model {
 public:
  // Opens, validates and binds `path`. Throws fasa::Error naming the file and the problem.
  static std::shared_ptr<const Model> load(const std::string& path, const LoadOptions& opts = {});

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const GgufFile& file() const { return *file_; }
  // nullptr when the file carries no tokenizer; see require_tokenizer().
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const Tokenizer& require_tokenizer() const;
  uint64_t weight_bytes() const;
  // The RoPE a run with n_ctx slots per sequence uses (LongRoPE switches tables on n_ctx);
  // `local`: gemma3's sliding-window layers (their own base, unscaled). Made at load.
  const RopeTable& rope_table(int n_ctx, bool local = false) const;
  // Tensors of the file the loader did not bind (each on the documented ignore list).
  const std::vector<std::string>& ignored_tensors() const { return ignored_; }
  // Matrices repacked at load: their count, and "on (N matrices, X MiB)" or "off (why)".
  int repacked_matrices() const { return static_cast<int>(repacked_.size()); }
  std::string repack_status() const;
  // sha256 of the file, hashed once (the first caller waits; later ones get the same string).
  const std::string& sha256() const;

 private:
  Model() = default;
  std::shared_ptr<const GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<std::vector<float>> owned_;  // norm vectors stored in a non-f32 type, converted
  std::vector<std::string> ignored_;
  struct FreeBytes {
    void operator()(uint8_t* p) const;
  };
  std::vector<std::unique_ptr<uint8_t, FreeBytes>> repacked_;  // repacked matrices' bytes
  uint64_t repacked_bytes_ = 0;                                // their sizes, summed
  std::string repack_off_;  // why matrices were not repacked ("" when they were)
  void repack_matrices();
  void make_rope_tables();  // rope_short_, rope_long_, rope_local_ from config_ and weights_
  RopeTable rope_short_;    // global layers; the only table unless the file has LongRoPE factors
  RopeTable rope_long_;     // global layers of a run past the original context (LongRoPE)
  RopeTable rope_local_;    // sliding-window layers
  struct Sha256Memo {
    std::once_flag once;
    std::string hex;
  };
  std::unique_ptr<Sha256Memo> sha256_ = std::make_unique<Sha256Memo>();
};

// sha256 of the model file (Model::sha256): the identity calibrations and results are bound to.
std::string model_identity(const Model& model);

}  // namespace fasa
