// Paper-shaped random-weight models (`fasa synth`): GGUF files with the exact shapes, metadata
// and per-tensor quantization types of public Q4_K_M files (Llama-3.1-8B-Instruct,
// Qwen2.5-7B-Instruct), filled with random quants of valid block scales. They measure speed and
// memory at paper scale; their outputs mean nothing (never use them for accuracy).
//
// The per-tensor types follow llama.cpp's quantizer for LLAMA_FTYPE_MOSTLY_Q4_K_M
// (src/llama-quant.cpp, llama_tensor_get_type): Q4_K by default; output.weight Q6_K; attn_v and
// ffn_down Q6_K in the layers where use_more_bits(layer, n_layers) holds (the first and last
// eighth, and every third layer between), Q4_K elsewhere; 1-D tensors (norms, biases,
// rope_freqs) F32; a matrix whose row is not a multiple of 256 falls back (Q4_K -> Q5_0,
// Q6_K -> Q8_0; output -> Q8_0). docs/MODELS.md lists the tables.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fasa/core/dtype.h"

namespace fasa::synth {

struct ShapeSpec {
  std::string name;        // "llama-3.1-8b-instruct-q4_k_m"
  std::string arch;        // "llama" | "qwen2"
  std::string model_name;  // general.name
  int n_layers = 0;
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int d_ff = 0;
  int n_vocab = 0;
  int n_ctx = 0;  // context_length
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool qkv_bias = false;  // qwen2: F32 Q/K/V biases
  bool write_vocab_keys =
      false;  // {arch}.vocab_size and rope.dimension_count (llama's file has them)
  // llama3 RoPE scaling, written as the `rope_freqs.weight` F32 tensor (factor > 0).
  float rope_factor = 0.0f;
  float rope_low_freq_factor = 1.0f;
  float rope_high_freq_factor = 4.0f;
  int rope_orig_ctx = 8192;
  // Tokenizer: byte-level BPE without merges; ids 0..255 are the 256 byte tokens (GPT-2's
  // printable-first order, as in both real vocabularies), `specials` are control tokens at their
  // real ids, every other id a filler token "[filler_ID]".
  std::string tok_pre;  // tokenizer.ggml.pre
  std::vector<std::pair<int, std::string>> specials;
  int bos_id = 0;
  int eos_id = 0;
  int pad_id = -1;  // -1: none written
  bool add_bos = false;
};

// One tensor of the file: its name, type, shape (ggml order) and what fills it.
enum class TensorRole { Weight, Norm, Bias, RopeFreqs };
struct ShapedTensor {
  std::string name;
  DType type = DType::F32;
  std::vector<int64_t> ne;
  TensorRole role = TensorRole::Weight;
  float weight_std = 0.0f;  // Weight: target standard deviation of the dequantized values
  uint64_t n_bytes() const;
};

// The shapes `fasa synth` knows, in the order `--list` prints them.
const std::vector<std::string>& shape_names();
// Throws fasa::Error naming the known shapes for an unknown name.
ShapeSpec shape_spec(const std::string& name);

// A smaller variant of a shape (tests): same rules, metadata and tokenizer layout, the given
// sizes; the special tokens keep their distance from the top of the vocabulary. Each size must
// keep the spec valid (heads divide d_model, kv heads divide heads, n_vocab >= 256 + specials).
struct ShapeOverride {
  int n_layers = 0, d_model = 0, n_heads = 0, n_kv_heads = 0, d_ff = 0, n_vocab = 0;
};
ShapeSpec shrink(const ShapeSpec& spec, const ShapeOverride& o);

// The Q4_K_M type llama.cpp gives a matrix (see the file comment). `layer` is the block index
// (-1 for token_embd/output), `row` its ne[0].
DType q4_k_m_type(const std::string& name, int layer, int n_layers, int64_t row);
bool use_more_bits(int layer, int n_layers);

// Every tensor of the file, in file order.
std::vector<ShapedTensor> shaped_tensors(const ShapeSpec& spec);
uint64_t shaped_data_bytes(const ShapeSpec& spec);  // sum of the tensors' bytes (no padding)

// llama3 RoPE factors as convert_hf_to_gguf.py computes them: [head_dim / 2].
std::vector<float> llama3_rope_factors(const ShapeSpec& spec);

// Fills n_blocks blocks of `type` (Q4_K, Q6_K, Q5_0, Q8_0, F32, F16) at `out` with random
// values of standard deviation about `std` and mean about 0 (valid f16 scales), from a
// generator seeded by `seed` (same seed, same bytes).
void fill_random_blocks(DType type, int64_t n_blocks, float std, uint64_t seed, uint8_t* out);

// Writes the model (atomic: temporary file, fsync, rename). `progress(done, total)` in bytes.
// Throws fasa::Error for an unwritable path or a failed write (disk full).
void write_shaped_model(const ShapeSpec& spec, const std::string& path, uint64_t seed,
                        const std::function<void(uint64_t, uint64_t)>& progress = nullptr);

}  // namespace fasa::synth
