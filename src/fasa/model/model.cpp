#include "fasa/model/model.h"

#include <fmt/format.h>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/kernels/dequant.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

namespace {

const GgufTensorInfo& require_tensor(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  if (t == nullptr) fail("{}: missing tensor '{}'", f.path(), name);
  const DTypeInfo* info = dtype_info(static_cast<uint32_t>(t->type));
  if (info == nullptr || !info->supported) {
    fail("{}: tensor '{}' has type {} which this engine cannot compute with", f.path(), name,
         info ? std::string(info->name) : std::to_string(static_cast<uint32_t>(t->type)));
  }
  return *t;
}

std::string shape_str(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

WeightMatrix bind_matrix(const GgufFile& f, const std::string& name, int64_t n_out,
                         int64_t n_in) {
  const GgufTensorInfo& t = require_tensor(f, name);
  if (t.ne.size() != 2 || t.ne[0] != n_in || t.ne[1] != n_out) {
    fail("{}: tensor '{}' has shape {}, expected [{}, {}]", f.path(), name, shape_str(t.ne),
         n_in, n_out);
  }
  return WeightMatrix{t.type, t.data, n_out, n_in, t.n_bytes};
}

}  // namespace

const Tokenizer& Model::require_tokenizer() const {
  if (!tokenizer_) fail("{}: the model file has no tokenizer metadata", file_->path());
  return *tokenizer_;
}

uint64_t Model::weight_bytes() const {
  uint64_t n = 0;
  for (const auto& t : file_->tensors()) n += t.n_bytes;
  return n;
}

std::shared_ptr<const Model> Model::load(const std::string& path, const LoadOptions& opts) {
  std::shared_ptr<Model> m(new Model());
  m->file_ = GgufFile::open(path);
  const GgufFile& f = *m->file_;
  m->config_ = ModelConfig::from_gguf(f);
  ModelConfig& c = m->config_;
  if (opts.rope_layout_override) c.rope_layout = *opts.rope_layout_override;

  // Norm vectors: f32 in practice; other float types are converted once and owned.
  auto bind_vector = [&](const std::string& name, int64_t n) -> const float* {
    const GgufTensorInfo& t = require_tensor(f, name);
    if (t.n_elements != n || t.ne.size() != 1) {
      fail("{}: tensor '{}' has shape {}, expected [{}]", f.path(), name, shape_str(t.ne), n);
    }
    if (t.type == DType::F32) return reinterpret_cast<const float*>(t.data);
    if (n % dtype_info(t.type).block_elems != 0) {
      fail("{}: tensor '{}' length {} is not a whole number of {} blocks", f.path(), name, n,
           dtype_name(t.type));
    }
    auto& v = m->owned_.emplace_back(static_cast<size_t>(n));
    dequantize_row(t.type, t.data, v.data(), n);
    return v.data();
  };

  const int64_t d = c.d_model, q_dim = int64_t{c.n_heads} * c.head_dim,
                kv_dim = int64_t{c.n_kv_heads} * c.head_dim;
  ModelWeights& w = m->weights_;
  w.tok_embd = bind_matrix(f, "token_embd.weight", c.n_vocab, d);
  w.output_norm = bind_vector("output_norm.weight", d);
  w.output = c.tied_output ? w.tok_embd : bind_matrix(f, "output.weight", c.n_vocab, d);
  w.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    LayerWeights& L = w.layers[l];
    L.attn_norm = bind_vector(p + "attn_norm.weight", d);
    L.wq = bind_matrix(f, p + "attn_q.weight", q_dim, d);
    L.wk = bind_matrix(f, p + "attn_k.weight", kv_dim, d);
    L.wv = bind_matrix(f, p + "attn_v.weight", kv_dim, d);
    if (c.qkv_bias) {
      L.bq = bind_vector(p + "attn_q.bias", q_dim);
      L.bk = bind_vector(p + "attn_k.bias", kv_dim);
      L.bv = bind_vector(p + "attn_v.bias", kv_dim);
    }
    if (c.qk_norm) {
      L.q_norm = bind_vector(p + "attn_q_norm.weight", c.head_dim);
      L.k_norm = bind_vector(p + "attn_k_norm.weight", c.head_dim);
    }
    L.wo = bind_matrix(f, p + "attn_output.weight", d, q_dim);
    if (c.post_norms) {
      L.attn_post_norm = bind_vector(p + "post_attention_norm.weight", d);
      L.ffn_post_norm = bind_vector(p + "post_ffw_norm.weight", d);
    }
    L.ffn_norm = bind_vector(p + "ffn_norm.weight", d);
    L.w_gate = bind_matrix(f, p + "ffn_gate.weight", c.d_ff, d);
    L.w_up = bind_matrix(f, p + "ffn_up.weight", c.d_ff, d);
    L.w_down = bind_matrix(f, p + "ffn_down.weight", d, c.d_ff);
  }
  if (opts.load_tokenizer && f.find("tokenizer.ggml.model") != nullptr) {
    m->tokenizer_ = Tokenizer::from_gguf(f);
    if (m->tokenizer_->n_vocab() > c.n_vocab) {
      fail("{}: tokenizer has {} tokens but the embedding has {} rows", f.path(),
           m->tokenizer_->n_vocab(), c.n_vocab);
    }
  }
  return m;
}

}  // namespace fasa
