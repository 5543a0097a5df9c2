#include "fasa/model/forward.h"

#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul.h"
#include "fasa/kernels/ops.h"

namespace fasa {

namespace {

void matmul_w(const WeightMatrix& w, const float* x, int n_tok, float* y) {
  matmul(w.type, w.data, w.n_out, w.n_in, x, n_tok, y);
}

}  // namespace

void ForwardScratch::reserve(const ModelConfig& c, int n_tok) {
  if (n_tok <= n_tok_cap) return;
  n_tok_cap = n_tok;
  const size_t n = static_cast<size_t>(n_tok);
  x.resize(n * c.d_model);
  xn.resize(n * c.d_model);
  q.resize(n * c.n_heads * c.head_dim);
  k.resize(n * c.n_kv_heads * c.head_dim);
  v.resize(n * c.n_kv_heads * c.head_dim);
  att.resize(n * c.n_heads * c.head_dim);
  proj.resize(n * c.d_model);
  gate.resize(n * c.d_ff);
  up.resize(n * c.d_ff);
  freqs.resize(c.rope_dim / 2);
  rope_freqs(c.rope_base, c.rope_dim, freqs.data());
  for (float& fr : freqs) fr *= c.rope_freq_scale;  // linear scaling (1 without)
}

void forward(const Model& model, KvCache& cache, AttentionPolicy& policy, const int32_t* tokens,
             const int32_t* pos, int n_tok, bool all_logits, float* logits,
             ForwardScratch& s, AttnStats* stats) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  FASA_CHECK(n_tok > 0 && cache.n_used() + n_tok <= cache.capacity());
  s.reserve(c, n_tok);
  const int d = c.d_model, hd = c.head_dim;
  const int q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
  const int first_slot = cache.n_used();

  // Embedding rows.  x: [n_tok, d_model]
  const size_t emb_row_bytes = w.tok_embd.n_bytes / static_cast<size_t>(w.tok_embd.n_out);
  for (int t = 0; t < n_tok; ++t) {
    const auto* row = static_cast<const uint8_t*>(w.tok_embd.data) + tokens[t] * emb_row_bytes;
    dequantize_row(w.tok_embd.type, row, s.x.data() + static_cast<size_t>(t) * d, d);
  }

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[l];
    // Attention block.
    for (int t = 0; t < n_tok; ++t) {
      rmsnorm(s.x.data() + t * d, L.attn_norm, c.rms_eps, d, s.xn.data() + t * d);
    }
    matmul_w(L.wq, s.xn.data(), n_tok, s.q.data());  // [n_tok, n_heads * head_dim]
    matmul_w(L.wk, s.xn.data(), n_tok, s.k.data());  // [n_tok, n_kv_heads * head_dim]
    matmul_w(L.wv, s.xn.data(), n_tok, s.v.data());  // [n_tok, n_kv_heads * head_dim]
    if (c.qkv_bias) {
      for (int t = 0; t < n_tok; ++t) {
        add_inplace(s.q.data() + t * q_dim, L.bq, q_dim);
        add_inplace(s.k.data() + t * kv_dim, L.bk, kv_dim);
        add_inplace(s.v.data() + t * kv_dim, L.bv, kv_dim);
      }
    }
    for (int t = 0; t < n_tok; ++t) {
      for (int h = 0; h < c.n_heads; ++h) {
        rope_apply(s.q.data() + t * q_dim + h * hd, hd, c.rope_dim, c.rope_layout, pos[t],
                   s.freqs.data());
      }
      for (int g = 0; g < c.n_kv_heads; ++g) {
        float* kr = s.k.data() + t * kv_dim + g * hd;
        rope_apply(kr, hd, c.rope_dim, c.rope_layout, pos[t], s.freqs.data());
        cache.store(l, g, first_slot + t, kr, s.v.data() + t * kv_dim + g * hd);
      }
    }
    policy.on_append(cache, l, first_slot, n_tok);
    AttnStep step;
    step.layer = l;
    step.n_tok = n_tok;
    step.first_slot = first_slot;
    step.pos = pos;
    step.q = s.q.data();
    step.out = s.att.data();
    attention_forward(step, cache, policy, stats);
    matmul_w(L.wo, s.att.data(), n_tok, s.proj.data());  // [n_tok, d_model]
    add_inplace(s.x.data(), s.proj.data(), static_cast<int64_t>(n_tok) * d);

    // Feed-forward block (SwiGLU).
    for (int t = 0; t < n_tok; ++t) {
      rmsnorm(s.x.data() + t * d, L.ffn_norm, c.rms_eps, d, s.xn.data() + t * d);
    }
    matmul_w(L.w_gate, s.xn.data(), n_tok, s.gate.data());  // [n_tok, d_ff]
    matmul_w(L.w_up, s.xn.data(), n_tok, s.up.data());      // [n_tok, d_ff]
    silu_mul(s.gate.data(), s.up.data(), static_cast<int64_t>(n_tok) * c.d_ff, s.gate.data());
    matmul_w(L.w_down, s.gate.data(), n_tok, s.proj.data());  // [n_tok, d_model]
    add_inplace(s.x.data(), s.proj.data(), static_cast<int64_t>(n_tok) * d);
  }
  cache.commit(n_tok, pos);

  // Output head over the rows that need logits.  logits: [n_out, n_vocab]
  const int first_out = all_logits ? 0 : n_tok - 1;
  const int n_out = n_tok - first_out;
  for (int t = first_out; t < n_tok; ++t) {
    rmsnorm(s.x.data() + t * d, w.output_norm, c.rms_eps, d, s.xn.data() + (t - first_out) * d);
  }
  matmul_w(w.output, s.xn.data(), n_out, logits);
}

}  // namespace fasa
