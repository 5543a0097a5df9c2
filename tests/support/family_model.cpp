// The family table and the weight generator; the twin of scripts/dev/make_family_models.py,
// line for line (same key order, tensor order and draws), so both write identical bytes.
#include "support/family_model.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/io/gguf.h"

namespace fasa {

namespace {

enum class Rope { None, Llama3, Yarn, LongRope };

struct FamilySpec {
  const char* name;
  const char* base;  // the real model
  const char* arch;
  int n_layer, d_model, n_head, n_kv, head_dim;
  bool head_dim_key;  // the converter writes attention.key_length / value_length
  int d_ff, ctx;
  float rope_base, eps;
  bool tied;
  const char* vocab;  // "gpt2" or "llama"
  const char* pre;
  int n_vocab;
  Rope rope;
  float factor = 0, low = 0, high = 0;  // llama3 / yarn
  int orig = 0;                         // original context (llama3, yarn, longrope)
  int sliding_window = 0;               // phi3
};

const FamilySpec kFamilies[] = {
    {"llama3", "Llama-3.1-8B-Instruct",
     "llama",  2,
     512,      4,
     1,        128,
     false,    1024,
     8192,     500000.0f,
     1e-5f,    false,
     "gpt2",   "llama-bpe",
     512,      Rope::Llama3,
     8.0f,     1.0f,
     4.0f,     512},
    {"llama3.2", "Llama-3.2-3B-Instruct",
     "llama",    2,
     384,        3,
     1,          128,
     true,       1024,
     8192,       500000.0f,
     1e-5f,      true,
     "gpt2",     "llama-bpe",
     512,        Rope::Llama3,
     32.0f,      1.0f,
     4.0f,       256},
    {"mistral", "Mistral-7B-Instruct-v0.3", "llama", 2, 512, 4, 1, 128, false, 1024, 8192,
     1000000.0f, 1e-5f, false, "llama", "default", 512, Rope::None},
    {"qwen2.5-yarn",
     "Qwen2.5-7B-Instruct",
     "qwen2",
     2,
     896,
     7,
     1,
     128,
     false,
     1024,
     2048,
     1000000.0f,
     1e-6f,
     false,
     "gpt2",
     "qwen2",
     512,
     Rope::Yarn,
     4.0f,
     0,
     0,
     2048},
    {"deepseek-r1-qwen", "DeepSeek-R1-Distill-Qwen-7B", "qwen2", 2, 896, 7, 1, 128, false, 1024,
     8192, 10000.0f, 1e-6f, false, "gpt2", "deepseek-r1-qwen", 512, Rope::None},
    {"qwen3", "Qwen3-8B", "qwen3", 2, 256, 4, 1, 128, true, 768, 8192, 1000000.0f, 1e-6f, false,
     "gpt2", "qwen2", 512, Rope::None},
    {"phi3",  "Phi-3.5-mini-instruct",
     "phi3",  2,
     384,     4,
     4,       96,
     false,   768,
     8192,    10000.0f,
     1e-5f,   false,
     "llama", "default",
     512,     Rope::LongRope,
     0,       0,
     0,       256,
     262144},
};

const FamilySpec& spec_of(const std::string& family) {
  for (const FamilySpec& f : kFamilies) {
    if (family == f.name) return f;
  }
  fail(
      "unknown model family '{}' (known: llama3, llama3.2, mistral, qwen2.5-yarn, "
      "deepseek-r1-qwen, qwen3, phi3)",
      family);
}

// Token types (llama.cpp's numbering).
constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;

const std::vector<std::string> kLlama3Specials = {"<|begin_of_text|>",
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
const std::vector<std::string> kQwenSpecials = {"<|endoftext|>",      "<|im_start|>",
                                                "<|im_end|>",         "<|object_ref_start|>",
                                                "<|object_ref_end|>", "<|box_start|>",
                                                "<|box_end|>",        "<|quad_start|>",
                                                "<|quad_end|>",       "<|vision_start|>",
                                                "<|vision_end|>",     "<|vision_pad|>",
                                                "<|image_pad|>",      "<|video_pad|>"};
const std::vector<std::string> kQwenAdded = {"<tool_call>",    "</tool_call>",   "<|fim_prefix|>",
                                             "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
                                             "<|repo_name|>",  "<|file_sep|>"};
const std::vector<std::string> kQwen3Extra = {"<tool_response>", "</tool_response>", "<think>",
                                              "</think>"};
const std::vector<std::string> kDeepseekSpecials =
    {"<｜end▁of▁sentence｜>", "<|im_start|>",       "<|im_end|>",       "<｜begin▁of▁sentence｜>",
     "<|object_ref_start|>",  "<|object_ref_end|>", "<|box_start|>",    "<|box_end|>",
     "<|quad_start|>",        "<|quad_end|>",       "<|vision_start|>", "<|vision_end|>",
     "<|vision_pad|>",        "<|image_pad|>",      "<|video_pad|>"};
const std::vector<std::string> kDeepseekAdded = {"<tool_call>",
                                                 "</tool_call>",
                                                 "<|fim_prefix|>",
                                                 "<|fim_middle|>",
                                                 "<|fim_suffix|>",
                                                 "<|fim_pad|>",
                                                 "<|repo_name|>",
                                                 "<|file_sep|>",
                                                 "<｜User｜>",
                                                 "<｜Assistant｜>",
                                                 "<think>",
                                                 "</think>",
                                                 "<｜tool▁calls▁begin｜>",
                                                 "<｜tool▁calls▁end｜>"};
const std::vector<std::string> kMistralControl = {"<unk>",
                                                  "<s>",
                                                  "</s>",
                                                  "[INST]",
                                                  "[/INST]",
                                                  "[TOOL_CALLS]",
                                                  "[AVAILABLE_TOOLS]",
                                                  "[/AVAILABLE_TOOLS]",
                                                  "[TOOL_RESULTS]",
                                                  "[/TOOL_RESULTS]"};
const std::vector<std::string> kPhi3Added = {"<|endoftext|>",    "<|assistant|>",
                                             "<|placeholder1|>", "<|placeholder2|>",
                                             "<|placeholder3|>", "<|placeholder4|>",
                                             "<|system|>",       "<|end|>",
                                             "<|placeholder5|>", "<|placeholder6|>",
                                             "<|user|>"};
const std::vector<std::string> kMerges = {"Ġ t", "Ġ a", "h e", "i n", "r e", "o n", "Ġt he", "e r",
                                          "Ġ s", "a t", "Ġ w", "Ġ o", "e n", "Ġ c", "i t",   "i s"};
const std::vector<std::string> kPieces = {"▁t", "▁a", "he", "in", "re", "on", "▁the", "er",
                                          "▁s", "at", "▁w", "▁o", "en", "▁c", "it",   "is"};

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t tensor_seed(uint64_t family_seed, const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a 64 of the name
  for (unsigned char b : name) h = (h ^ b) * 0x100000001B3ULL;
  return mix(family_seed ^ h);
}

// n integers in [-r, r]: the i-th is (mix(seed + (i + 1) * gamma) >> 32) mod (2r + 1) - r.
std::vector<int64_t> ints(uint64_t seed, int64_t n, int64_t r) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t z = mix(seed + static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15ULL);
    out[static_cast<size_t>(i)] =
        static_cast<int64_t>((z >> 32) % static_cast<uint64_t>(2 * r + 1)) - r;
  }
  return out;
}

int bit_length(uint64_t x) { return x == 0 ? 0 : 64 - __builtin_clzll(x); }

// Matrix entries k * 2^-s, k in [-127, 127]: std ~ 1/sqrt(fan_in) within a factor 1.5.
int shift_for(int64_t fan_in) {
  return 6 + (bit_length(static_cast<uint64_t>(fan_in - 1)) + 1) / 2;
}

struct Writer {
  GgufWriter w;
  uint64_t fseed;

  // F16 [ne1, ne0] (ggml ne = {ne0, ne1}), entries k * 2^-(shift(ne0) - gain_log2).
  void matrix(const std::string& name, int64_t ne0, int64_t ne1, int gain_log2 = 0) {
    const int s = shift_for(ne0) - gain_log2;
    const auto k = ints(tensor_seed(fseed, name), ne0 * ne1, 127);
    std::vector<uint16_t> h(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
      h[i] = fp32_to_fp16(static_cast<float>(std::ldexp(static_cast<double>(k[i]), -s)));
    }
    w.add_tensor(name, DType::F16, {ne0, ne1}, h.data(), h.size() * 2);
  }
  // F32 [n]: 1 + k/256, k in [-31, 31].
  void norm(const std::string& name, int64_t n) {
    const auto k = ints(tensor_seed(fseed, name), n, 31);
    std::vector<float> v(k.size());
    for (size_t i = 0; i < k.size(); ++i) v[i] = static_cast<float>(1.0 + k[i] / 256.0);
    w.add_tensor_f32(name, {n}, v);
  }
  // F32 [n]: k/64, k in [-31, 31].
  void bias(const std::string& name, int64_t n) {
    const auto k = ints(tensor_seed(fseed, name), n, 31);
    std::vector<float> v(k.size());
    for (size_t i = 0; i < k.size(); ++i) v[i] = static_cast<float>(k[i] / 64.0);
    w.add_tensor_f32(name, {n}, v);
  }
};

// As convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors, in double, then F32.
std::vector<float> llama3_rope_factors(const FamilySpec& f) {
  std::vector<float> out;
  const double low_wavelen = f.orig / static_cast<double>(f.low);
  const double high_wavelen = f.orig / static_cast<double>(f.high);
  for (int i = 0; i < f.head_dim; i += 2) {
    const double freq =
        1.0 / std::pow(static_cast<double>(f.rope_base), static_cast<double>(i) / f.head_dim);
    const double wavelen = 2.0 * M_PI / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(f.factor);
    } else {
      const double smooth = (f.orig / wavelen - f.low) / (static_cast<double>(f.high) - f.low);
      out.push_back(static_cast<float>(1.0 / ((1.0 - smooth) / f.factor + smooth)));
    }
  }
  return out;
}

// Phi-3-style LongRoPE factors (values made up, shapes as the real ones): short 1 -> 2,
// long 1 -> 33, rising quadratically over the dimension pairs.
void longrope_factors(int n, std::vector<float>& lf, std::vector<float>& sf) {
  const double den = static_cast<double>((n - 1) * (n - 1));
  for (int i = 0; i < n; ++i) {
    sf.push_back(static_cast<float>(1.0 + (i * i) / den));
    lf.push_back(static_cast<float>(1.0 + 32.0 * (i * i) / den));
  }
}

void append_utf8(std::string& s, uint32_t c) {
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// GPT-2's byte -> character map, in the order the real vocabularies list the 256 bytes.
std::vector<std::string> byte_unicode_order() {
  std::vector<uint32_t> bs, cs;
  for (uint32_t b = 33; b < 127; ++b) bs.push_back(b);
  for (uint32_t b = 161; b < 173; ++b) bs.push_back(b);
  for (uint32_t b = 174; b < 256; ++b) bs.push_back(b);
  cs = bs;
  uint32_t n = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    bool listed = false;
    for (size_t i = 0; i < 188 && !listed; ++i) listed = bs[i] == b;
    if (!listed) {
      bs.push_back(b);
      cs.push_back(256 + n++);
    }
  }
  std::vector<std::string> out;
  for (uint32_t c : cs) {
    std::string s;
    append_utf8(s, c);
    out.push_back(s);
  }
  return out;
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<float> scores;  // SentencePiece only
  bool has_scores = false, has_merges = false;
  std::vector<std::pair<std::string, uint32_t>> ids;  // bos, eos, unknown, padding (those present)
  std::vector<std::pair<std::string, bool>> flags;    // add_bos, add_eos (those present)
};

Vocab make_vocab(const FamilySpec& f) {
  Vocab v;
  const std::string family = f.name;
  const auto pad_to = [&](size_t n, float score) {
    while (v.tokens.size() < n) {
      v.tokens.push_back("[PAD" + std::to_string(v.tokens.size()) + "]");
      v.types.push_back(kUnused);
      if (v.has_scores) v.scores.push_back(score);
    }
  };
  if (std::string(f.vocab) == "gpt2") {
    v.has_merges = true;
    v.tokens = byte_unicode_order();
    for (const std::string& m : kMerges) {
      std::string t;
      for (char c : m) {
        if (c != ' ') t += c;
      }
      v.tokens.push_back(t);
    }
    v.types.assign(v.tokens.size(), kNormal);
    std::vector<std::string> specials, added;
    if (family == "llama3" || family == "llama3.2") {
      specials = kLlama3Specials;
    } else if (family == "qwen3") {
      specials = kQwenSpecials;
      added = kQwenAdded;
      added.insert(added.end(), kQwen3Extra.begin(), kQwen3Extra.end());
    } else if (family == "deepseek-r1-qwen") {
      specials = kDeepseekSpecials;
      added = kDeepseekAdded;
    } else {
      specials = kQwenSpecials;
      added = kQwenAdded;
    }
    std::map<std::string, uint32_t> id;
    for (const std::string& t : specials) {
      id[t] = static_cast<uint32_t>(v.tokens.size());
      v.tokens.push_back(t);
      v.types.push_back(kControl);
    }
    for (const std::string& t : added) {
      id[t] = static_cast<uint32_t>(v.tokens.size());
      v.tokens.push_back(t);
      v.types.push_back(kUserDefined);
    }
    pad_to(static_cast<size_t>(f.n_vocab), 0.0f);
    if (family == "llama3" || family == "llama3.2") {
      v.ids = {{"bos", id["<|begin_of_text|>"]}, {"eos", id["<|eot_id|>"]}};
      v.flags = {{"add_bos", true}, {"add_eos", false}};
    } else if (family == "deepseek-r1-qwen") {
      v.ids = {{"bos", id["<｜begin▁of▁sentence｜>"]},
               {"eos", id["<｜end▁of▁sentence｜>"]},
               {"padding", id["<｜end▁of▁sentence｜>"]}};
      v.flags = {{"add_bos", true}, {"add_eos", false}};
    } else {
      v.ids = {{"bos", id["<|endoftext|>"]},
               {"eos", id["<|im_end|>"]},
               {"padding", id["<|endoftext|>"]}};
      v.flags = {{"add_bos", false}};
    }
    return v;
  }
  // SentencePiece: Mistral v0.3 (control tokens first), Phi-3 (<unk> <s> </s>; its added tokens
  // after the pieces).
  v.has_scores = true;
  if (family == "mistral") {
    v.tokens = kMistralControl;
    v.types.assign(v.tokens.size(), kControl);
    v.types[0] = kUnknown;
  } else {
    v.tokens = {"<unk>", "<s>", "</s>"};
    v.types = {kUnknown, kControl, kControl};
  }
  static const char* kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    v.types.push_back(kByte);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  for (size_t i = 0; i < kPieces.size(); ++i) {
    v.tokens.push_back(kPieces[i]);
    v.types.push_back(kNormal);
    v.scores.push_back(-static_cast<float>(i + 1));
  }
  if (family == "phi3") {
    const size_t first = static_cast<size_t>(f.n_vocab) - kPhi3Added.size();
    pad_to(first, -10000.0f);
    for (const std::string& t : kPhi3Added) {
      v.tokens.push_back(t);
      v.types.push_back(t == "<|endoftext|>" ? kControl : kUserDefined);
      v.scores.push_back(-1000.0f);
    }
    const auto eot = static_cast<uint32_t>(first);
    v.ids = {{"bos", 1}, {"eos", eot}, {"unknown", 0}, {"padding", eot}};
  } else {
    pad_to(static_cast<size_t>(f.n_vocab), -10000.0f);
    v.ids = {{"bos", 1}, {"eos", 2}, {"unknown", 0}};
  }
  v.flags = {{"add_bos", family != "phi3"}, {"add_eos", false}};
  return v;
}

}  // namespace

std::vector<std::string> family_names() {
  std::vector<std::string> out;
  for (const FamilySpec& f : kFamilies) out.emplace_back(f.name);
  return out;
}

void write_family_model(const std::string& family, uint64_t seed, const std::string& path) {
  const FamilySpec& f = spec_of(family);
  const std::string a = f.arch;
  Writer wr{GgufWriter(), mix(seed)};
  GgufWriter& w = wr.w;
  w.set_string("general.architecture", a);
  w.set_string("general.type", "model");
  w.set_string("general.name", std::string(f.base) + " (fasa random-weight family file)");
  const auto u32 = [&](const std::string& k, int64_t v) { w.set_u32(k, static_cast<uint32_t>(v)); };
  if (a == "phi3") {  // Phi3MiniModel.set_gguf_parameters, in its order
    u32(a + ".context_length", f.ctx);
    u32(a + ".rope.scaling.original_context_length", f.orig);
    u32(a + ".embedding_length", f.d_model);
    u32(a + ".feed_forward_length", f.d_ff);
    u32(a + ".block_count", f.n_layer);
    u32(a + ".attention.head_count", f.n_head);
    u32(a + ".attention.head_count_kv", f.n_kv);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", f.eps);
    u32(a + ".rope.dimension_count", f.head_dim);
    w.set_f32(a + ".rope.freq_base", f.rope_base);
    u32("general.file_type", 1);
    u32(a + ".attention.sliding_window", f.sliding_window);
    const double scale = static_cast<double>(f.ctx) / f.orig;
    w.set_f32(a + ".rope.scaling.attn_factor",
              static_cast<float>(
                  std::sqrt(1 + std::log(scale) / std::log(static_cast<double>(f.orig)))));
  } else {  // TextModel.set_gguf_parameters (+ LlamaModel's vocab_size, rope.dimension_count)
    u32(a + ".block_count", f.n_layer);
    u32(a + ".context_length", f.ctx);
    u32(a + ".embedding_length", f.d_model);
    u32(a + ".feed_forward_length", f.d_ff);
    u32(a + ".attention.head_count", f.n_head);
    u32(a + ".attention.head_count_kv", f.n_kv);
    if (f.rope == Rope::Yarn) {
      w.set_string(a + ".rope.scaling.type", "yarn");
      w.set_f32(a + ".rope.scaling.factor", f.factor);
      u32(a + ".rope.scaling.original_context_length", f.orig);
    }
    w.set_f32(a + ".rope.freq_base", f.rope_base);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", f.eps);
    if (f.head_dim_key) {
      u32(a + ".attention.key_length", f.head_dim);
      u32(a + ".attention.value_length", f.head_dim);
    }
    u32("general.file_type", 1);
    if (a == "llama") {
      u32(a + ".vocab_size", f.n_vocab);
      u32(a + ".rope.dimension_count", f.head_dim);
    }
  }
  const Vocab v = make_vocab(f);
  w.set_string("tokenizer.ggml.model", f.vocab);
  w.set_string("tokenizer.ggml.pre", f.pre);
  w.set_string_array("tokenizer.ggml.tokens", v.tokens);
  if (v.has_scores) w.set_f32_array("tokenizer.ggml.scores", v.scores);
  w.set_i32_array("tokenizer.ggml.token_type", v.types);
  if (v.has_merges) w.set_string_array("tokenizer.ggml.merges", kMerges);
  for (const auto& [k, id] : v.ids) u32("tokenizer.ggml." + k + "_token_id", id);
  for (const auto& [k, on] : v.flags) w.set_bool("tokenizer.ggml." + k + "_token", on);
  w.set_string("tokenizer.chat_template", family_chat_template(family));
  u32("general.quantization_version", 2);

  const int64_t d = f.d_model, hd = f.head_dim, nh = f.n_head, nkv = f.n_kv, ff = f.d_ff,
                nv = f.n_vocab;
  if (f.rope == Rope::Llama3) {
    const auto r = llama3_rope_factors(f);
    w.add_tensor_f32("rope_freqs.weight", {static_cast<int64_t>(r.size())}, r);
  }
  if (f.rope == Rope::LongRope) {
    std::vector<float> lf, sf;
    longrope_factors(f.head_dim / 2, lf, sf);
    w.add_tensor_f32("rope_factors_long.weight", {hd / 2}, lf);
    w.add_tensor_f32("rope_factors_short.weight", {hd / 2}, sf);
  }
  wr.matrix("token_embd.weight", d, nv, 2);
  for (int l = 0; l < f.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    wr.norm(p + "attn_norm.weight", d);
    if (a == "phi3") {
      wr.matrix(p + "attn_qkv.weight", d, (nh + 2 * nkv) * hd);
    } else {
      wr.matrix(p + "attn_q.weight", d, nh * hd);
      wr.matrix(p + "attn_k.weight", d, nkv * hd);
      wr.matrix(p + "attn_v.weight", d, nkv * hd);
    }
    if (a == "qwen2") {
      wr.bias(p + "attn_q.bias", nh * hd);
      wr.bias(p + "attn_k.bias", nkv * hd);
      wr.bias(p + "attn_v.bias", nkv * hd);
    }
    if (a == "qwen3") {
      wr.norm(p + "attn_q_norm.weight", hd);
      wr.norm(p + "attn_k_norm.weight", hd);
    }
    wr.matrix(p + "attn_output.weight", nh * hd, d);
    wr.norm(p + "ffn_norm.weight", d);
    if (a == "phi3") {  // rows [0, d_ff) are the gate, [d_ff, 2 d_ff) the up projection
      wr.matrix(p + "ffn_up.weight", d, 2 * ff);
    } else {
      wr.matrix(p + "ffn_gate.weight", d, ff);
      wr.matrix(p + "ffn_up.weight", d, ff);
    }
    wr.matrix(p + "ffn_down.weight", ff, d);
  }
  wr.norm("output_norm.weight", d);
  if (!f.tied) wr.matrix("output.weight", d, nv, 2);
  w.write(path);
}

std::string family_chat_template(const std::string& family) {
  static const std::map<std::string, std::string> kFiles = {{"llama3", "llama3.1"},
                                                            {"llama3.2", "llama3.2"},
                                                            {"mistral", "mistral-v0.3"},
                                                            {"qwen2.5-yarn", "qwen2.5"},
                                                            {"deepseek-r1-qwen",
                                                             "deepseek-r1-distill-qwen"},
                                                            {"qwen3", "qwen3"},
                                                            {"phi3", "phi3.5"}};
  const auto it = kFiles.find(family);
  if (it == kFiles.end()) fail("no chat template for family '{}'", family);
  const std::string path =
      std::string(FASA_TEST_DATA_DIR) + "/tokenizer/families/templates/" + it->second + ".jinja";
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {}", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace fasa
