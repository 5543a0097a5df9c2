#include "fasa/synth/shaped_model.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/core/splitmix.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/unicode.h"

namespace fasa::synth {

namespace {

constexpr uint32_t kFileTypeQ4KM = 15;  // general.file_type: LLAMA_FTYPE_MOSTLY_Q4_K_M

ShapeSpec llama31_8b() {
  ShapeSpec s;
  s.name = "llama-3.1-8b-instruct-q4_k_m";
  s.arch = "llama";
  s.model_name = "Llama-3.1-8B-Instruct shape, random weights (fasa synth: speed only)";
  s.n_layers = 32;
  s.d_model = 4096;
  s.n_heads = 32;
  s.n_kv_heads = 8;
  s.d_ff = 14336;
  s.n_vocab = 128256;
  s.n_ctx = 131072;
  s.rope_base = 500000.0f;
  s.rms_eps = 1e-5f;
  s.write_vocab_keys = true;
  s.rope_factor = 8.0f;
  s.rope_low_freq_factor = 1.0f;
  s.rope_high_freq_factor = 4.0f;
  s.rope_orig_ctx = 8192;
  s.tok_pre = "llama-bpe";
  // Llama 3.1's 256 special tokens, 128000..128255.
  const char* named[] = {"<|begin_of_text|>",
                         "<|end_of_text|>",
                         "<|reserved_special_token_0|>",
                         "<|reserved_special_token_1|>",
                         "<|finetune_right_pad_id|>",
                         "<|reserved_special_token_2|>",
                         "<|start_header_id|>",
                         "<|end_header_id|>",
                         "<|eom_id|>",
                         "<|eot_id|>",
                         "<|python_tag|>"};
  int id = 128000;
  for (const char* t : named) s.specials.emplace_back(id++, t);
  for (int r = 3; id < 128256; ++r) {
    s.specials.emplace_back(id++, fmt::format("<|reserved_special_token_{}|>", r));
  }
  s.bos_id = 128000;
  s.eos_id = 128009;  // <|eot_id|>, as in the Instruct file
  s.add_bos = true;
  return s;
}

ShapeSpec qwen25_7b() {
  ShapeSpec s;
  s.name = "qwen2.5-7b-instruct-q4_k_m";
  s.arch = "qwen2";
  s.model_name = "Qwen2.5-7B-Instruct shape, random weights (fasa synth: speed only)";
  s.n_layers = 28;
  s.d_model = 3584;
  s.n_heads = 28;
  s.n_kv_heads = 4;
  s.d_ff = 18944;
  s.n_vocab = 152064;
  s.n_ctx = 32768;
  s.rope_base = 1000000.0f;
  s.rms_eps = 1e-6f;
  s.qkv_bias = true;
  s.tok_pre = "qwen2";
  const char* named[] = {"<|endoftext|>",        "<|im_start|>",       "<|im_end|>",
                         "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
                         "<|box_end|>",          "<|quad_start|>",     "<|quad_end|>",
                         "<|vision_start|>",     "<|vision_end|>",     "<|vision_pad|>",
                         "<|image_pad|>",        "<|video_pad|>",      "<tool_call>",
                         "</tool_call>",         "<|fim_prefix|>",     "<|fim_middle|>",
                         "<|fim_suffix|>",       "<|fim_pad|>",        "<|repo_name|>",
                         "<|file_sep|>"};
  int id = 151643;
  for (const char* t : named) s.specials.emplace_back(id++, t);
  s.bos_id = 151643;
  s.eos_id = 151645;  // <|im_end|>
  s.pad_id = 151643;
  s.add_bos = false;
  return s;
}

void check_spec(const ShapeSpec& s) {
  auto bad = [&](const std::string& why) { fail("shape '{}': {}", s.name, why); };
  if (s.n_layers < 1 || s.d_model < 1 || s.n_heads < 1 || s.n_kv_heads < 1 || s.d_ff < 1) {
    bad("every size must be >= 1");
  }
  if (s.d_model % s.n_heads != 0) bad("d_model must be a multiple of n_heads");
  if (s.n_heads % s.n_kv_heads != 0) bad("n_kv_heads must divide n_heads");
  if ((s.d_model / s.n_heads) % 2 != 0) bad("head_dim must be even");
  if (s.d_model % 32 != 0 || s.d_ff % 32 != 0) bad("d_model and d_ff must be multiples of 32");
  std::set<int> ids;
  for (const auto& [id, text] : s.specials) {
    if (id < 256 || id >= s.n_vocab || !ids.insert(id).second) {
      bad(fmt::format("special token {} at id {} is not a free id in [256, {})", text, id,
                      s.n_vocab));
    }
  }
  for (int id : {s.bos_id, s.eos_id}) {
    if (ids.count(id) == 0) bad(fmt::format("BOS/EOS id {} is not a special token", id));
  }
}

// The seed of each row's generator (tensor, row); splitmix64 is the generator itself.
uint64_t mix(uint64_t a, uint64_t b) { return splitmix64_mix(a ^ (b * 0xd1342543de82ef95ull)); }

uint64_t name_hash(const std::string& s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::vector<float> norm_or_bias(const ShapedTensor& t, uint64_t seed) {
  uint64_t st = mix(seed, name_hash(t.name));
  std::vector<float> v(static_cast<size_t>(t.ne[0]));
  for (float& x : v) {
    const double u = static_cast<double>(splitmix64(st) >> 11) * 0x1.0p-53;  // [0, 1)
    // Norm weights in [0.7, 1.3]; biases in [-1, 1].
    x = t.role == TensorRole::Norm ? static_cast<float>(0.7 + 0.6 * u)
                                   : static_cast<float>(2.0 * u - 1.0);
  }
  return v;
}

void write_metadata(GgufWriter& w, const ShapeSpec& s, uint64_t seed) {
  const std::string a = s.arch + ".";
  w.set_string("general.architecture", s.arch);
  w.set_string("general.type", "model");
  w.set_string("general.name", s.model_name);
  w.set_string("fasa.synth.shape", s.name);
  w.set_u64("fasa.synth.seed", seed);
  w.set_u32(a + "block_count", s.n_layers);
  w.set_u32(a + "context_length", s.n_ctx);
  w.set_u32(a + "embedding_length", s.d_model);
  w.set_u32(a + "feed_forward_length", s.d_ff);
  w.set_u32(a + "attention.head_count", s.n_heads);
  w.set_u32(a + "attention.head_count_kv", s.n_kv_heads);
  w.set_f32(a + "rope.freq_base", s.rope_base);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
  w.set_u32("general.file_type", kFileTypeQ4KM);
  if (s.write_vocab_keys) {
    w.set_u32(a + "vocab_size", s.n_vocab);
    w.set_u32(a + "rope.dimension_count", s.d_model / s.n_heads);
  }
  std::vector<std::string> tokens(s.n_vocab);
  std::vector<int32_t> types(s.n_vocab, 1);  // normal
  // GPT-2's byte order: the printable bytes first, then the others.
  std::vector<int> bytes;
  for (int b = 0; b < 256; ++b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) bytes.push_back(b);
  }
  for (int b = 0; b < 256; ++b) {
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) bytes.push_back(b);
  }
  for (int i = 0; i < 256; ++i) tokens[i] = unicode::byte_to_utf8(static_cast<uint8_t>(bytes[i]));
  for (int i = 256; i < s.n_vocab; ++i) tokens[i] = fmt::format("[filler_{}]", i);
  for (const auto& [id, text] : s.specials) {
    tokens[id] = text;
    types[id] = 3;  // control
  }
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", s.tok_pre);
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_string_array("tokenizer.ggml.merges", {});
  w.set_u32("tokenizer.ggml.bos_token_id", s.bos_id);
  w.set_u32("tokenizer.ggml.eos_token_id", s.eos_id);
  if (s.pad_id >= 0) w.set_u32("tokenizer.ggml.padding_token_id", s.pad_id);
  w.set_bool("tokenizer.ggml.add_bos_token", s.add_bos);
  w.set_u32("general.quantization_version", 2);
}

}  // namespace

uint64_t ShapedTensor::n_bytes() const {
  const DTypeInfo& info = dtype_info(type);
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return static_cast<uint64_t>(n / info.block_elems) * static_cast<uint64_t>(info.block_bytes);
}

const std::vector<std::string>& shape_names() {
  static const std::vector<std::string> names = {"llama-3.1-8b-instruct-q4_k_m",
                                                 "qwen2.5-7b-instruct-q4_k_m"};
  return names;
}

ShapeSpec shape_spec(const std::string& name) {
  if (name == "llama-3.1-8b-instruct-q4_k_m") return llama31_8b();
  if (name == "qwen2.5-7b-instruct-q4_k_m") return qwen25_7b();
  std::string known;
  for (const std::string& n : shape_names()) known += (known.empty() ? "" : ", ") + n;
  fail("unknown shape '{}' (known: {})", name, known);
}

ShapeSpec shrink(const ShapeSpec& spec, const ShapeOverride& o) {
  ShapeSpec s = spec;
  if (o.n_layers > 0) s.n_layers = o.n_layers;
  if (o.d_model > 0) s.d_model = o.d_model;
  if (o.n_heads > 0) s.n_heads = o.n_heads;
  if (o.n_kv_heads > 0) s.n_kv_heads = o.n_kv_heads;
  if (o.d_ff > 0) s.d_ff = o.d_ff;
  if (o.n_vocab > 0) {
    const int shift = spec.n_vocab - o.n_vocab;
    s.n_vocab = o.n_vocab;
    for (auto& sp : s.specials) sp.first -= shift;
    s.bos_id -= shift;
    s.eos_id -= shift;
    if (s.pad_id >= 0) s.pad_id -= shift;
  }
  s.name += "-shrunk";
  check_spec(s);
  return s;
}

bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

DType q4_k_m_type(const std::string& name, int layer, int n_layers, int64_t row) {
  DType t = DType::Q4_K;
  if (name == "output.weight") {
    return row % 256 == 0 ? DType::Q6_K : DType::Q8_0;
  }
  const bool more = layer >= 0 && use_more_bits(layer, n_layers);
  if ((name.find("attn_v.weight") != std::string::npos ||
       name.find("ffn_down") != std::string::npos) &&
      more) {
    t = DType::Q6_K;
  }
  if (row % 256 != 0) t = t == DType::Q6_K ? DType::Q8_0 : DType::Q5_0;  // the fallbacks
  if (row % 32 != 0) t = DType::F16;
  return t;
}

std::vector<ShapedTensor> shaped_tensors(const ShapeSpec& s) {
  check_spec(s);
  const int64_t d = s.d_model, hd = s.d_model / s.n_heads;
  const int64_t q_dim = s.n_heads * hd, kv_dim = s.n_kv_heads * hd, ff = s.d_ff;
  std::vector<ShapedTensor> out;
  auto matrix = [&](const std::string& name, int layer, int64_t row, int64_t rows, double std) {
    out.push_back({name,
                   q4_k_m_type(name, layer, s.n_layers, row),
                   {row, rows},
                   TensorRole::Weight,
                   static_cast<float>(std)});
  };
  auto vec = [&](const std::string& name, int64_t n, TensorRole role) {
    out.push_back({name, DType::F32, {n}, role, 0.0f});
  };
  if (s.rope_factor > 0.0f) vec("rope_freqs.weight", hd / 2, TensorRole::RopeFreqs);
  matrix("token_embd.weight", -1, d, s.n_vocab, 0.02);
  const double in_d = 1.0 / std::sqrt(static_cast<double>(d));
  for (int l = 0; l < s.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    vec(p + "attn_norm.weight", d, TensorRole::Norm);
    matrix(p + "attn_q.weight", l, d, q_dim, in_d);
    matrix(p + "attn_k.weight", l, d, kv_dim, in_d);
    matrix(p + "attn_v.weight", l, d, kv_dim, in_d);
    if (s.qkv_bias) {
      vec(p + "attn_q.bias", q_dim, TensorRole::Bias);
      vec(p + "attn_k.bias", kv_dim, TensorRole::Bias);
      vec(p + "attn_v.bias", kv_dim, TensorRole::Bias);
    }
    matrix(p + "attn_output.weight", l, q_dim, d, 1.0 / std::sqrt(static_cast<double>(q_dim)));
    vec(p + "ffn_norm.weight", d, TensorRole::Norm);
    matrix(p + "ffn_gate.weight", l, d, ff, in_d);
    matrix(p + "ffn_up.weight", l, d, ff, in_d);
    matrix(p + "ffn_down.weight", l, ff, d, 1.0 / std::sqrt(static_cast<double>(ff)));
  }
  vec("output_norm.weight", d, TensorRole::Norm);
  matrix("output.weight", -1, d, s.n_vocab, in_d);
  return out;
}

uint64_t shaped_data_bytes(const ShapeSpec& spec) {
  uint64_t n = 0;
  for (const ShapedTensor& t : shaped_tensors(spec)) n += t.n_bytes();
  return n;
}

std::vector<float> llama3_rope_factors(const ShapeSpec& s) {
  const int hd = s.d_model / s.n_heads;
  const double low_wavelen = s.rope_orig_ctx / s.rope_low_freq_factor;
  const double high_wavelen = s.rope_orig_ctx / s.rope_high_freq_factor;
  std::vector<float> out;
  for (int i = 0; i < hd; i += 2) {
    // The converter computes the frequencies in float32.
    const float freq = 1.0f / std::pow(s.rope_base, static_cast<float>(i) / hd);
    const double wavelen = 2.0 * M_PI / freq;
    double f = 1.0;
    if (wavelen > low_wavelen) {
      f = s.rope_factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (s.rope_orig_ctx / wavelen - s.rope_low_freq_factor) /
                            (s.rope_high_freq_factor - s.rope_low_freq_factor);
      f = 1.0 / ((1.0 - smooth) / s.rope_factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

void write_shaped_model(const ShapeSpec& spec, const std::string& path, uint64_t seed,
                        const std::function<void(uint64_t, uint64_t)>& progress) {
  const std::vector<ShapedTensor> tensors = shaped_tensors(spec);
  GgufWriter w;
  write_metadata(w, spec, seed);
  for (const ShapedTensor& t : tensors) {
    if (t.role == TensorRole::RopeFreqs) {
      w.add_tensor_f32(t.name, t.ne, llama3_rope_factors(spec));
    } else if (t.role != TensorRole::Weight) {
      w.add_tensor_f32(t.name, t.ne, norm_or_bias(t, seed));
    } else {
      const uint64_t tensor_seed = mix(seed, name_hash(t.name));
      const DTypeInfo& info = dtype_info(t.type);
      const int64_t blocks_per_row = t.ne[0] / info.block_elems;
      const uint64_t row_bytes = static_cast<uint64_t>(blocks_per_row * info.block_bytes);
      const DType type = t.type;
      const float std = t.weight_std;
      // Each row from its own seed: the bytes do not depend on the pieces or the threads.
      w.add_tensor_rows(t.name, t.type, t.ne, [=](int64_t r0, int64_t n, uint8_t* out) {
        parallel_for(n, [&](int64_t i) {
          fill_random_blocks(type, blocks_per_row, std, mix(tensor_seed, r0 + i),
                             out + i * row_bytes);
        });
      });
    }
  }
  w.write(path, progress);
}

}  // namespace fasa::synth
