#include "support/tiny_model.h"

#include <cmath>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include <algorithm>

#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/io/gguf.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul.h"
#include "fasa/tokenizer/unicode.h"
#include "support/ref/kernels_ref.h"

namespace fasa::test {

namespace {

// Random tensor bytes of `type` for n elements with sane scale fields.
std::vector<uint8_t> random_tensor(DType type, int64_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::uniform_int_distribution<int> byte(0, 255);
  const DTypeInfo& info = dtype_info(type);
  const int64_t n_blocks = n / info.block_elems;
  std::vector<uint8_t> out(static_cast<size_t>(n_blocks * info.block_bytes));
  if (type == DType::F32) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = nd(rng);
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return out;
  }
  if (type == DType::F16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t h = fp32_to_fp16(nd(rng));
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
    return out;
  }
  for (auto& b : out) b = static_cast<uint8_t>(byte(rng));
  if (!info.supported) return out;
  auto put_f16 = [&](uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
  };
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = out.data() + b * info.block_bytes;
    switch (type) {
      case DType::Q8_0: put_f16(blk, scale / 64.0f); break;
      case DType::Q4_0: put_f16(blk, scale / 4.0f); break;
      case DType::Q4_1:
        put_f16(blk, scale / 4.0f);
        put_f16(blk + 2, -2.0f * scale);
        break;
      // K-quants: random codes, scales and mins; super-block scales sized so that weights are
      // of order `scale` (6-bit sub-block scales and mins, 4- or 6-bit codes).
      case DType::Q4_K:
        put_f16(blk, scale / 128.0f);
        put_f16(blk + 2, scale / 64.0f);
        break;
      case DType::Q6_K: put_f16(blk + 208, scale / 1024.0f); break;
      default: FASA_CHECK(false && "tiny model: unsupported weight type");
    }
  }
  return out;
}

void add_random(GgufWriter& w, const std::string& name, DType type, std::vector<int64_t> ne,
                float scale, std::mt19937& rng, const TinySpec& s) {
  if (name == s.omit_tensor) return;
  if (name == s.i32_tensor) type = DType::I32;
  if (name == s.transposed_tensor) std::swap(ne[0], ne[1]);
  int64_t n = 1;
  for (auto d : ne) n *= d;
  const auto bytes = random_tensor(type, n, scale, rng);
  w.add_tensor(name, type, ne, bytes.data(), bytes.size());
}

std::vector<float> norm_weights(int n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0.7f, 1.3f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

}  // namespace

void write_tiny_model(const std::string& path, const TinySpec& s) {
  std::mt19937 rng(s.seed);
  GgufWriter w;
  const int hd = s.d_model / s.n_heads;
  w.set_string("general.architecture", s.arch);
  w.set_string("general.name", "tiny-random");
  const std::string a = s.arch + ".";
  w.set_u32(a + "block_count", s.n_layers);
  w.set_u32(a + "context_length", s.n_ctx);
  w.set_u32(a + "embedding_length", s.d_model);
  w.set_u32(a + "feed_forward_length", s.d_ff);
  w.set_u32(a + "attention.head_count", s.n_heads);
  w.set_u32(a + "attention.head_count_kv", s.n_kv_heads);
  w.set_f32(a + "rope.freq_base", s.rope_base);
  if (!s.rope_scaling.empty()) w.set_string(a + "rope.scaling.type", s.rope_scaling);
  if (s.rope_factor > 0.0f) w.set_f32(a + "rope.scaling.factor", s.rope_factor);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32(a + "rope.dimension_count", hd);
  w.set_u32(a + "vocab_size", s.n_vocab);
  if (s.sliding_window > 0) w.set_u32(a + "attention.sliding_window", s.sliding_window);
  if (s.window_pattern > 0) w.set_u32(a + "attention.sliding_window_pattern", s.window_pattern);
  if (s.rope_base_local > 0) w.set_f32(a + "rope.freq_base_swa", s.rope_base_local);
  if (!s.extra_key.empty()) w.set_u32(a + s.extra_key, 1);
  if (!s.extra_tensor.empty())
    w.add_tensor_f32(s.extra_tensor, {8}, std::vector<float>(8, s.extra_value));
  if (s.byte_tokenizer) {
    FASA_CHECK(s.n_vocab >= 257);
    std::vector<std::string> tokens = {"<|endoftext|>"};
    std::vector<int32_t> types = {3};
    for (int b = 0; b < 256; ++b) {
      tokens.push_back(unicode::byte_to_utf8(static_cast<uint8_t>(b)));
      types.push_back(1);
    }
    while (static_cast<int>(tokens.size()) < s.n_vocab) {
      tokens.push_back(fmt::format("<|unused_{}|>", tokens.size()));
      types.push_back(3);
    }
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "default");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", {});
    w.set_u32("tokenizer.ggml.bos_token_id", 0);
    w.set_u32("tokenizer.ggml.eos_token_id", 0);
    w.set_bool("tokenizer.ggml.add_bos_token", false);
  }
  const bool gemma = s.arch == "gemma3";
  const float ws = 1.0f / std::sqrt(static_cast<float>(s.d_model));
  add_random(w, "token_embd.weight", s.wtype, {s.d_model, s.n_vocab}, 1.0f, rng, s);
  w.add_tensor_f32("output_norm.weight", {s.d_model}, norm_weights(s.d_model, rng));
  if (!s.tied_output) add_random(w, "output.weight", s.wtype, {s.d_model, s.n_vocab}, ws, rng, s);
  for (int l = 0; l < s.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    w.add_tensor_f32(p + "attn_norm.weight", {s.d_model}, norm_weights(s.d_model, rng));
    add_random(w, p + "attn_q.weight", s.wtype, {s.d_model, s.n_heads * hd}, 2.0f * ws, rng, s);
    add_random(w, p + "attn_k.weight", s.wtype, {s.d_model, s.n_kv_heads * hd}, 2.0f * ws, rng, s);
    const DType mixed = s.wtype_mixed.value_or(s.wtype);
    add_random(w, p + "attn_v.weight", mixed, {s.d_model, s.n_kv_heads * hd}, ws, rng, s);
    if (s.arch == "qwen2") {  // Q/K/V biases, f32 as converters store them
      for (const auto& [name, n] :
           {std::pair{"attn_q.bias", s.n_heads * hd}, std::pair{"attn_k.bias", s.n_kv_heads * hd},
            std::pair{"attn_v.bias", s.n_kv_heads * hd}}) {
        if (p + name == s.omit_tensor) continue;
        std::normal_distribution<float> nd(0.0f, 0.5f);
        std::vector<float> b(n);
        for (auto& x : b) x = nd(rng);
        w.add_tensor_f32(p + name, {static_cast<int64_t>(n)}, b);
      }
    }
    if (gemma) {
      for (const char* name : {"attn_q_norm.weight", "attn_k_norm.weight"}) {
        if (p + name != s.omit_tensor) w.add_tensor_f32(p + name, {hd}, norm_weights(hd, rng));
      }
    }
    add_random(w, p + "attn_output.weight", s.wtype, {s.n_heads * hd, s.d_model}, ws, rng, s);
    if (gemma) {
      for (const char* name : {"post_attention_norm.weight", "post_ffw_norm.weight"}) {
        if (p + name != s.omit_tensor) {
          w.add_tensor_f32(p + name, {s.d_model}, norm_weights(s.d_model, rng));
        }
      }
    }
    w.add_tensor_f32(p + "ffn_norm.weight", {s.d_model}, norm_weights(s.d_model, rng));
    add_random(w, p + "ffn_gate.weight", s.wtype, {s.d_model, s.d_ff}, ws, rng, s);
    add_random(w, p + "ffn_up.weight", s.wtype, {s.d_model, s.d_ff}, ws, rng, s);
    add_random(w, p + "ffn_down.weight", mixed, {s.d_ff, s.d_model},
               1.0f / std::sqrt(static_cast<float>(s.d_ff)), rng, s);
  }
  w.write(path);
}

namespace {

// Whole tensor as f32 via the scalar reference dequantizer.  [ne1, ne0]
std::vector<float> load_f32(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  FASA_CHECK(t != nullptr);
  std::vector<float> out(static_cast<size_t>(t->n_elements));
  ref::dequantize_row(t->type, t->data, out.data(), t->n_elements);
  return out;
}

// y[o] = sum_i W[o, i] x[i]   W: [n_out, n_in] as stored. The product is ref::matmul: double
// accumulation of the engine's intended math, which for 32-block quants includes quantizing the
// activations to 8 bits (kernels/matmul_q8.h), exactly as the engine does.
std::vector<double> matvec(const GgufTensorInfo* W, const std::vector<double>& x, int64_t n_out) {
  const int64_t n_in = static_cast<int64_t>(x.size());
  std::vector<float> xf(x.begin(), x.end()), y(n_out);
  ref::matmul(W->type, W->data, n_out, n_in, xf.data(), 1, y.data());
  return {y.begin(), y.end()};
}

std::vector<double> rms(const std::vector<double>& x, const std::vector<float>& w, double eps) {
  double ss = 0.0;
  for (double v : x) ss += v * v;
  const double sc = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * sc * w[i];
  return y;
}

void rope(double* v, int hd, double pos, double base, bool neox) {
  for (int i = 0; i < hd / 2; ++i) {
    const double ang = pos * std::pow(base, -2.0 * i / hd);
    const int a = neox ? i : 2 * i, b = neox ? i + hd / 2 : 2 * i + 1;
    const double x0 = v[a], x1 = v[b];
    v[a] = x0 * std::cos(ang) - x1 * std::sin(ang);
    v[b] = x0 * std::sin(ang) + x1 * std::cos(ang);
  }
}

}  // namespace

std::vector<float> reference_forward(const std::string& path, const std::vector<int32_t>& tokens,
                                     bool neox, bool f16_kv) {
  auto fp = GgufFile::open(path);
  const GgufFile& f = *fp;
  const std::string a = f.get_string("general.architecture") + ".";
  const int n_layers = static_cast<int>(f.get_int(a + "block_count"));
  const int d = static_cast<int>(f.get_int(a + "embedding_length"));
  const int d_ff = static_cast<int>(f.get_int(a + "feed_forward_length"));
  const int n_heads = static_cast<int>(f.get_int(a + "attention.head_count"));
  const int n_kv = static_cast<int>(f.get_int(a + "attention.head_count_kv"));
  const double base = f.get_float(a + "rope.freq_base");
  // Linear RoPE scaling: position p rotates like p / factor.
  const double pos_scale = f.get_string_or(a + "rope.scaling.type", "none") == "linear"
                               ? 1.0 / f.get_float(a + "rope.scaling.factor")
                               : 1.0;
  const double eps = f.get_float(a + "attention.layer_norm_rms_epsilon");
  const int hd = d / n_heads, group = n_heads / n_kv;
  // gemma3: layer l slides (window W) unless l % period == period - 1; local RoPE base, unscaled.
  const bool gemma = a == "gemma3.";
  const int window = gemma ? static_cast<int>(f.get_int(a + "attention.sliding_window")) : 0;
  const int period = static_cast<int>(f.get_int_or(a + "attention.sliding_window_pattern", 6));
  const double base_local = f.get_float_or(a + "rope.freq_base_swa", 10000.0);
  const auto emb = load_f32(f, "token_embd.weight");
  const int n_vocab = static_cast<int>(emb.size() / d);
  const GgufTensorInfo* out_w = f.find_tensor("output.weight") ? f.find_tensor("output.weight")
                                                               : f.find_tensor("token_embd.weight");
  const auto out_norm = load_f32(f, "output_norm.weight");
  const int n = static_cast<int>(tokens.size());

  std::vector<std::vector<double>> x(n, std::vector<double>(d));
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < d; ++i) {
      x[t][i] = emb[static_cast<size_t>(tokens[t]) * d + i] * (gemma ? std::sqrt(float(d)) : 1.0f);
    }
  }
  for (int l = 0; l < n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    const bool slides = gemma && l % period < period - 1;
    const double layer_base = slides ? base_local : base;
    const double layer_pos_scale = slides ? 1.0 : pos_scale;
    const auto an = load_f32(f, p + "attn_norm.weight"), fn = load_f32(f, p + "ffn_norm.weight");
    auto tensor = [&](const char* name) { return f.find_tensor(p + name); };
    const GgufTensorInfo *wq = tensor("attn_q.weight"), *wk = tensor("attn_k.weight");
    const GgufTensorInfo *wv = tensor("attn_v.weight"), *wo = tensor("attn_output.weight");
    const GgufTensorInfo *wg = tensor("ffn_gate.weight"), *wu = tensor("ffn_up.weight");
    const GgufTensorInfo* wd = tensor("ffn_down.weight");
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (int t = 0; t < n; ++t) {
      const auto xn = rms(x[t], an, eps);
      q[t] = matvec(wq, xn, n_heads * hd);
      k[t] = matvec(wk, xn, n_kv * hd);
      v[t] = matvec(wv, xn, n_kv * hd);
      if (tensor("attn_q.bias") != nullptr) {  // qwen2
        const auto bq = load_f32(f, p + "attn_q.bias"), bk = load_f32(f, p + "attn_k.bias");
        const auto bv = load_f32(f, p + "attn_v.bias");
        for (size_t i = 0; i < q[t].size(); ++i) q[t][i] += bq[i];
        for (size_t i = 0; i < k[t].size(); ++i) k[t][i] += bk[i];
        for (size_t i = 0; i < v[t].size(); ++i) v[t][i] += bv[i];
      }
      if (gemma) {  // QK-norm: every head over its own dims, one weight vector for all heads
        const auto qn = load_f32(f, p + "attn_q_norm.weight");
        const auto kn = load_f32(f, p + "attn_k_norm.weight");
        auto norm_heads = [&](std::vector<double>& v, const std::vector<float>& w) {
          for (size_t h = 0; h < v.size() / hd; ++h) {
            std::vector<double> head(v.begin() + h * hd, v.begin() + (h + 1) * hd);
            head = rms(head, w, eps);
            std::copy(head.begin(), head.end(), v.begin() + h * hd);
          }
        };
        norm_heads(q[t], qn);
        norm_heads(k[t], kn);
      }
      for (int h = 0; h < n_heads; ++h) {
        rope(q[t].data() + h * hd, hd, t * layer_pos_scale, layer_base, neox);
      }
      for (int h = 0; h < n_kv; ++h) {
        rope(k[t].data() + h * hd, hd, t * layer_pos_scale, layer_base, neox);
      }
      if (f16_kv) {  // what an f16 cache holds
        for (auto* kv : {&k[t], &v[t]}) {
          for (double& e : *kv) e = fp16_to_fp32(fp32_to_fp16(static_cast<float>(e)));
        }
      }
    }
    for (int t = 0; t < n; ++t) {
      std::vector<double> att(n_heads * hd, 0.0);
      for (int h = 0; h < n_heads; ++h) {
        const int g = h / group;
        const int j0 = slides ? std::max(0, t - window + 1) : 0;  // the window's first key
        std::vector<double> s(t + 1, 0.0);
        double mx = -1e300;
        for (int j = j0; j <= t; ++j) {
          double dot = 0.0;
          for (int i = 0; i < hd; ++i) dot += q[t][h * hd + i] * k[j][g * hd + i];
          s[j] = dot / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[j]);
        }
        double sum = 0.0;
        for (int j = j0; j <= t; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int j = j0; j <= t; ++j) {
          for (int i = 0; i < hd; ++i) att[h * hd + i] += s[j] / sum * v[j][g * hd + i];
        }
      }
      auto o = matvec(wo, att, d);
      if (gemma) o = rms(o, load_f32(f, p + "post_attention_norm.weight"), eps);
      for (int i = 0; i < d; ++i) x[t][i] += o[i];
      const auto xn = rms(x[t], fn, eps);
      const auto g = matvec(wg, xn, d_ff), u = matvec(wu, xn, d_ff);
      std::vector<double> h(d_ff);
      for (int i = 0; i < d_ff; ++i) {
        const double act = gemma ? 0.5 * g[i] *
                                       (1.0 + std::tanh(std::sqrt(2.0 / M_PI) *
                                                        (g[i] + 0.044715 * g[i] * g[i] * g[i])))
                                 : g[i] / (1.0 + std::exp(-g[i]));
        h[i] = act * u[i];
      }
      auto dn = matvec(wd, h, d);
      if (gemma) dn = rms(dn, load_f32(f, p + "post_ffw_norm.weight"), eps);
      for (int i = 0; i < d; ++i) x[t][i] += dn[i];
    }
  }
  std::vector<float> logits(static_cast<size_t>(n) * n_vocab);
  for (int t = 0; t < n; ++t) {
    const auto y = matvec(out_w, rms(x[t], out_norm, eps), n_vocab);
    for (int i = 0; i < n_vocab; ++i)
      logits[static_cast<size_t>(t) * n_vocab + i] = static_cast<float>(y[i]);
  }
  return logits;
}

std::vector<int32_t> random_tokens(int n, int n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, n_vocab - 1);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = u(rng);
  return t;
}

}  // namespace fasa::test
