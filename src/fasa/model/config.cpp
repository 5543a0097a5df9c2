#include "fasa/model/config.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/model/metadata_keys.h"

namespace fasa {

namespace {

int read_count(const GgufFile& f, const std::string& key, int64_t lo, int64_t hi) {
  const int64_t v = f.get_int(key);
  if (v < lo || v > hi) {
    fail("{}: metadata '{}' = {} is out of range [{}, {}]", f.path(), key, v, lo, hi);
  }
  return static_cast<int>(v);
}

// Architectures the forward pass implements, with their RoPE layout.
bool known_arch(const std::string& arch, RopeLayout* layout) {
  if (arch == "llama") {
    *layout = RopeLayout::Norm;  // the converter permuted Q/K rows into interleaved pairs
    return true;
  }
  if (arch == "qwen2") {  // llama's block plus Q/K/V biases; halves-paired (NEOX) RoPE
    *layout = RopeLayout::Neox;
    return true;
  }
  if (arch == "qwen3") {  // llama's block plus per-head Q/K RMSNorm, no biases; NEOX RoPE
    *layout = RopeLayout::Neox;
    return true;
  }
  if (arch == "phi3") {  // llama's block with fused QKV and fused gate/up matrices; NEOX RoPE
    *layout = RopeLayout::Neox;
    return true;
  }
  if (arch == "gemma3") {  // Gemma blocks, sliding-window and global layers; NEOX RoPE
    *layout = RopeLayout::Neox;
    return true;
  }
  return false;
}

// RoPE bases in real files reach 1e6-1e8; far larger ones only overflow the angle tables.
constexpr float kMaxRopeBase = 1e12f;

// Gemma 3's block and layer pattern. The values the metadata does not carry follow llama.cpp
// (the reference the goldens come from): one global layer in every 6, local RoPE base 1e4, and
// the attention scale of gemma_pytorch's config for each size (27B, 62 layers: 1/sqrt(d/heads)).
void read_gemma3(const GgufFile& f, const std::string& a, ModelConfig& c) {
  c.embd_scale = std::sqrt(static_cast<float>(c.d_model));
  c.qk_norm = true;
  c.post_norms = true;
  c.ffn_act = FfnAct::GeluTanh;
  if (f.find(a + "attention.scale") != nullptr) {
    c.attn_scale = static_cast<float>(f.get_float(a + "attention.scale"));
    if (!(c.attn_scale > 0.0f && c.attn_scale <= 1.0f)) {
      fail("{}: '{}attention.scale' = {} must be in (0, 1]", f.path(), a, c.attn_scale);
    }
  } else if (c.n_layers == 62) {
    const int query_scalar = c.d_model / c.n_heads;  // an integer in the reference (5376 / 32)
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(query_scalar));
  }
  c.final_logit_softcap = static_cast<float>(f.get_float_or(a + "final_logit_softcapping", 0.0));
  if (!(c.final_logit_softcap >= 0.0f && c.final_logit_softcap <= 1e6f)) {
    fail("{}: '{}final_logit_softcapping' = {} must be in [0, 1e6]", f.path(), a,
         c.final_logit_softcap);
  }
  if (f.find(a + "attention.sliding_window") == nullptr) {
    fail("{}: missing metadata '{}attention.sliding_window' (gemma3 needs its window size)",
         f.path(), a);
  }
  const int window = read_count(f, a + "attention.sliding_window", 1, 1 << 24);
  // Which layers slide: a period n (layer l slides unless l % n == n - 1), or one bool per layer.
  const std::string pat_key = a + "attention.sliding_window_pattern";
  const GgufValue* pat = f.find(pat_key);
  c.layer_window.assign(c.n_layers, 0);
  if (pat != nullptr && pat->type == GgufType::ARRAY) {
    if (pat->elem_type != GgufType::BOOL || static_cast<int>(pat->array.size()) != c.n_layers) {
      fail("{}: '{}' must be {} bools (one per layer) or one integer", f.path(), pat_key,
           c.n_layers);
    }
    for (int l = 0; l < c.n_layers; ++l)
      c.layer_window[l] = std::get<bool>(pat->array[l]) ? window : 0;
  } else {
    const int period = pat ? read_count(f, pat_key, 1, 1 << 16) : 6;
    for (int l = 0; l < c.n_layers; ++l) c.layer_window[l] = l % period < period - 1 ? window : 0;
  }
  c.rope_base_local = static_cast<float>(f.get_float_or(a + "rope.freq_base_swa", 10000.0));
  if (!(c.rope_base_local > 1.0f && c.rope_base_local <= kMaxRopeBase)) {
    fail("{}: '{}rope.freq_base_swa' = {} must be in (1, 1e12]", f.path(), a, c.rope_base_local);
  }
}

}  // namespace

ModelConfig ModelConfig::from_gguf(const GgufFile& f) {
  ModelConfig c;
  c.arch = f.get_string("general.architecture");
  if (!known_arch(c.arch, &c.rope_layout)) {
    fail("{}: unsupported architecture '{}' (supported: llama, qwen2, qwen3, phi3, gemma3)",
         f.path(), c.arch);
  }
  check_metadata_keys(f, c.arch);
  c.name = f.get_string_or("general.name", "");
  const std::string a = c.arch + ".";
  c.n_layers = read_count(f, a + "block_count", 1, 1024);
  c.d_model = read_count(f, a + "embedding_length", 1, 1 << 17);
  c.d_ff = read_count(f, a + "feed_forward_length", 1, 1 << 20);
  c.n_heads = read_count(f, a + "attention.head_count", 1, 1024);
  c.n_kv_heads = static_cast<int>(f.get_int_or(a + "attention.head_count_kv", c.n_heads));
  if (c.n_kv_heads < 1 || c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0) {
    fail("{}: head_count_kv = {} must divide head_count = {}", f.path(), c.n_kv_heads, c.n_heads);
  }
  if (f.find(a + "attention.key_length") == nullptr && c.d_model % c.n_heads != 0) {
    fail("{}: embedding_length {} is not a multiple of head_count {}", f.path(), c.d_model,
         c.n_heads);
  }
  c.head_dim = static_cast<int>(f.get_int_or(a + "attention.key_length", c.d_model / c.n_heads));
  const int64_t v_len = f.get_int_or(a + "attention.value_length", c.head_dim);
  if (c.head_dim < 2 || c.head_dim % 2 != 0 || c.head_dim > 1024 || v_len != c.head_dim) {
    fail("{}: unsupported head dims (key_length {}, value_length {})", f.path(), c.head_dim, v_len);
  }
  c.n_ctx_train = read_count(f, a + "context_length", 1, 1 << 24);
  c.rms_eps = static_cast<float>(f.get_float_or(a + "attention.layer_norm_rms_epsilon", 1e-5));
  if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f)) {
    fail("{}: layer_norm_rms_epsilon {} is out of range", f.path(), c.rms_eps);
  }
  c.rope_base = static_cast<float>(f.get_float_or(a + "rope.freq_base", 10000.0));
  if (!(c.rope_base > 1.0f && c.rope_base <= kMaxRopeBase)) {
    fail("{}: rope.freq_base {} must be in (1, 1e12]", f.path(), c.rope_base);
  }
  c.rope_dim = static_cast<int>(f.get_int_or(a + "rope.dimension_count", c.head_dim));
  if (c.rope_dim < 2 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
    fail("{}: rope.dimension_count {} must be even and <= head_dim {}", f.path(), c.rope_dim,
         c.head_dim);
  }
  c.rope_scaling = read_rope_scaling(f, c.arch, c.n_ctx_train);
  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  if (emb == nullptr) fail("{}: missing tensor 'token_embd.weight'", f.path());
  if (emb->ne.size() != 2) fail("{}: token_embd.weight must be 2-D", f.path());
  c.n_vocab = static_cast<int>(f.get_int_or(a + "vocab_size", emb->ne[1]));
  c.tied_output = f.find_tensor("output.weight") == nullptr;
  c.qkv_bias = c.arch == "qwen2";
  c.qk_norm = c.arch == "qwen3";
  c.fused_qkv = f.find_tensor("blk.0.attn_qkv.weight") != nullptr;
  c.fused_gate_up = c.arch == "phi3";
  if (c.arch == "gemma3") read_gemma3(f, a, c);
  if (c.attn_scale == 0.0f) c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return c;
}

int ModelConfig::n_ctx_max() const {
  if (rope_scaling.type != RopeScalingType::Yarn) return n_ctx_train;
  const double scaled = static_cast<double>(rope_scaling.n_ctx_orig) / rope_scaling.freq_scale;
  return static_cast<int>(std::min<double>(1 << 24, std::max<double>(n_ctx_train, scaled)));
}

int ModelConfig::n_windowed_layers() const {
  int n = 0;
  for (int w : layer_window) n += w > 0;
  return n;
}

const char* ffn_act_name(FfnAct a) { return a == FfnAct::Silu ? "silu" : "gelu_tanh"; }

}  // namespace fasa
