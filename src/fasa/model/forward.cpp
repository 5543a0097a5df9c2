#include "fasa/model/forward.h"

#include <algorithm>
#include <cmath>

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
  if (c.n_windowed_layers() > 0) {  // local layers: their own base, never scaled
    freqs_local.resize(c.rope_dim / 2);
    rope_freqs(c.rope_base_local, c.rope_dim, freqs_local.data());
  }
}

void forward(const Model& model, KvCache& cache, AttentionPolicy& policy, const int32_t* tokens,
             const int32_t* pos, int n_tok, bool all_logits, float* logits,
             ForwardScratch& s, AttnStats* stats) {
  const int max_batch = cache.max_batch();
  if (n_tok > max_batch) {  // sliding-window rings hold one call of up to max_batch tokens
    const size_t n_vocab = model.config().n_vocab;
    for (int i = 0; i < n_tok; i += max_batch) {
      const int m = std::min(max_batch, n_tok - i);
      const bool last = i + m == n_tok;
      if (!all_logits && !last) {
        thread_local std::vector<float> unused;  // logits of a piece nobody asked for
        unused.resize(n_vocab);
        forward(model, cache, policy, tokens + i, pos + i, m, false, unused.data(), s, stats);
        continue;
      }
      forward(model, cache, policy, tokens + i, pos + i, m, all_logits,
              all_logits ? logits + static_cast<size_t>(i) * n_vocab : logits, s, stats);
    }
    return;
  }
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  FASA_CHECK(n_tok > 0 && cache.n_used() + n_tok <= cache.capacity());
  s.reserve(c, n_tok);
  const int d = c.d_model, hd = c.head_dim;
  const int q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
  const int first_slot = cache.n_used();
  // The attention kernels scale q.k by 1/sqrt(head_dim); another model scale is folded into q.
  const float q_fold = c.attn_scale * std::sqrt(static_cast<float>(hd));

  // Embedding rows.  x: [n_tok, d_model]
  const size_t emb_row_bytes = w.tok_embd.n_bytes / static_cast<size_t>(w.tok_embd.n_out);
  for (int t = 0; t < n_tok; ++t) {
    const auto* row = static_cast<const uint8_t*>(w.tok_embd.data) + tokens[t] * emb_row_bytes;
    float* xt = s.x.data() + static_cast<size_t>(t) * d;
    dequantize_row(w.tok_embd.type, row, xt, d);
    if (c.embd_scale != 1.0f) {
      for (int i = 0; i < d; ++i) xt[i] *= c.embd_scale;
    }
  }

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[l];
    const bool windowed = c.windowed(l);
    const float* freqs = windowed ? s.freqs_local.data() : s.freqs.data();
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
        float* qr = s.q.data() + t * q_dim + h * hd;
        if (c.qk_norm) rmsnorm(qr, L.q_norm, c.rms_eps, hd, qr);
        rope_apply(qr, hd, c.rope_dim, c.rope_layout, pos[t], freqs);
        if (q_fold != 1.0f) {
          for (int i = 0; i < hd; ++i) qr[i] *= q_fold;
        }
      }
      for (int g = 0; g < c.n_kv_heads; ++g) {
        float* kr = s.k.data() + t * kv_dim + g * hd;
        if (c.qk_norm) rmsnorm(kr, L.k_norm, c.rms_eps, hd, kr);
        rope_apply(kr, hd, c.rope_dim, c.rope_layout, pos[t], freqs);
        cache.store(l, g, first_slot + t, kr, s.v.data() + t * kv_dim + g * hd);
      }
    }
    // Sliding-window layers attend over their window, outside any policy.
    if (!windowed) policy.on_append(cache, l, first_slot, n_tok);
    AttnStep step;
    step.layer = l;
    step.n_tok = n_tok;
    step.first_slot = first_slot;
    step.pos = pos;
    step.q = s.q.data();
    step.out = s.att.data();
    attention_forward(step, cache, policy, stats);
    matmul_w(L.wo, s.att.data(), n_tok, s.proj.data());  // [n_tok, d_model]
    if (c.post_norms) {
      for (int t = 0; t < n_tok; ++t) {
        float* pt = s.proj.data() + t * d;
        rmsnorm(pt, L.attn_post_norm, c.rms_eps, d, pt);
      }
    }
    add_inplace(s.x.data(), s.proj.data(), static_cast<int64_t>(n_tok) * d);

    // Feed-forward block: act(gate) * up, act = SiLU (SwiGLU) or tanh-GELU (GeGLU).
    for (int t = 0; t < n_tok; ++t) {
      rmsnorm(s.x.data() + t * d, L.ffn_norm, c.rms_eps, d, s.xn.data() + t * d);
    }
    matmul_w(L.w_gate, s.xn.data(), n_tok, s.gate.data());  // [n_tok, d_ff]
    matmul_w(L.w_up, s.xn.data(), n_tok, s.up.data());      // [n_tok, d_ff]
    const int64_t n_ff = static_cast<int64_t>(n_tok) * c.d_ff;
    if (c.ffn_act == FfnAct::GeluTanh) {
      gelu_tanh_mul(s.gate.data(), s.up.data(), n_ff, s.gate.data());
    } else {
      silu_mul(s.gate.data(), s.up.data(), n_ff, s.gate.data());
    }
    matmul_w(L.w_down, s.gate.data(), n_tok, s.proj.data());  // [n_tok, d_model]
    if (c.post_norms) {
      for (int t = 0; t < n_tok; ++t) {
        float* pt = s.proj.data() + t * d;
        rmsnorm(pt, L.ffn_post_norm, c.rms_eps, d, pt);
      }
    }
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
  if (c.final_logit_softcap > 0.0f) {
    const float cap = c.final_logit_softcap;
    const size_t n = static_cast<size_t>(n_out) * c.n_vocab;
    for (size_t i = 0; i < n; ++i) logits[i] = cap * std::tanh(logits[i] / cap);
  }
}

}  // namespace fasa
