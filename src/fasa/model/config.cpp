#include "fasa/model/config.h"

#include <algorithm>
#include <cmath>
#include <optional>

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

// RoPE bases in real files reach 1e6-1e8; far larger ones only overflow the angle tables.
constexpr float kMaxRopeBase = 1e12f;

// Sliding-window and global layers, and the sliding-window layers' RoPE base. The values the
// metadata does not carry follow llama.cpp (the reference the goldens come from): the row's
// period (Gemma 3: one global layer in every 6), local RoPE base 1e4.
void read_windows(const GgufFile& f, const std::string& a, const ArchInfo& arch, ModelConfig& c) {
  if (f.find(a + "attention.sliding_window") == nullptr) {
    fail("{}: missing metadata '{}attention.sliding_window' ({} needs its window size)", f.path(),
         a, arch.name);
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
    const int period = pat ? read_count(f, pat_key, 1, 1 << 16) : arch.window_period;
    for (int l = 0; l < c.n_layers; ++l) c.layer_window[l] = l % period < period - 1 ? window : 0;
  }
  c.rope_base_local = static_cast<float>(f.get_float_or(a + "rope.freq_base_swa", 10000.0));
  if (!(c.rope_base_local > 1.0f && c.rope_base_local <= kMaxRopeBase)) {
    fail("{}: '{}rope.freq_base_swa' = {} must be in (1, 1e12]", f.path(), a, c.rope_base_local);
  }
}

// The block shape of the row, then the metadata only this architecture has.
void read_arch_block(const GgufFile& f, const std::string& a, const ArchInfo& arch,
                     ModelConfig& c) {
  c.qkv_bias = arch.qkv_bias;
  c.qk_norm = arch.qk_norm;
  c.fused_gate_up = arch.fused_gate_up;
  c.post_norms = arch.post_norms;
  c.ffn_act = arch.ffn_act;
  if (arch.embd_scale_sqrt_d) c.embd_scale = std::sqrt(static_cast<float>(c.d_model));
  if (arch.read_extra != nullptr) arch.read_extra(f, a, c);
  if (arch.sliding_window) read_windows(f, a, arch, c);
}

}  // namespace

ModelConfig ModelConfig::from_gguf(const GgufFile& f) {
  ModelConfig c;
  c.arch = f.get_string("general.architecture");
  const std::optional<Arch> id = parse_arch(c.arch);
  if (!id) {
    fail("{}: unsupported architecture '{}' (supported: {})", f.path(), c.arch, arch_names());
  }
  c.arch_id = *id;
  const ArchInfo& arch = arch_info(c.arch_id);
  c.rope_layout = arch.rope_layout;
  check_metadata_keys(f, arch);
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
  c.fused_qkv = f.find_tensor("blk.0.attn_qkv.weight") != nullptr;
  read_arch_block(f, a, arch, c);
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

}  // namespace fasa
