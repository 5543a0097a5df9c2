#include "fasa/model/forward.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <utility>

#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul.h"
#include "fasa/kernels/matmul_amx.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/repack.h"

namespace fasa {

namespace {

// Rows of one forward call by kernel class: a sequence chunk of at least kAmxMinTokens tokens
// may take the batched tiles (AMX), shorter ones (decode steps, short prompt tails) keep the
// per-token kernels. So a token's bits depend on its own chunk, never on what else shares the
// batch: the server's batched answers equal a lone `fasa run`'s, which prefills in the same chunks.
struct RowRun {
  int row0 = 0, n = 0;  // rows [row0, row0 + n) of x and y
  MatmulTiles tiles = MatmulTiles::kAny;
};

// Consecutive rows of one class in one run: [rows[i], rows[i + 1]) is chunk i's.
std::vector<RowRun> row_runs(const std::vector<int>& rows) {
  std::vector<RowRun> runs;
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    const int n = rows[i + 1] - rows[i];
    if (n == 0) continue;
    const MatmulTiles t = n >= kAmxMinTokens ? MatmulTiles::kAny : MatmulTiles::kPerToken;
    if (!runs.empty() && runs.back().tiles == t) {
      runs.back().n += n;
    } else {
      runs.push_back({rows[i], n, t});
    }
  }
  return runs;
}

void matmul_w(const WeightMatrix& w, const float* x, const std::vector<RowRun>& runs, float* y) {
  for (const RowRun& r : runs) {
    matmul(w.type, w.data, w.n_out, w.n_in, x + static_cast<size_t>(r.row0) * w.n_in, r.n,
           y + static_cast<size_t>(r.row0) * w.n_out, r.tiles);
  }
}

// Matrices that read the same x (q/k/v, gate/up): one fused call per row run (matmul_multi:
// the activations quantized once, one parallel region; the same bits as matmul_w on each).
void matmul_shared_x(std::initializer_list<std::pair<const WeightMatrix*, float*>> mats,
                     const float* x, const std::vector<RowRun>& runs) {
  MatmulJob jobs[3];  // the most a layer shares: q, k, v
  FASA_CHECK(mats.size() <= std::size(jobs));
  const int64_t n_in = mats.begin()->first->n_in;
  for (const RowRun& r : runs) {
    int n = 0;
    for (const auto& [w, y] : mats) {
      FASA_DCHECK(w->n_in == n_in);
      jobs[n++] = {w->type, w->data, w->n_out, y + static_cast<size_t>(r.row0) * w->n_out};
    }
    matmul_multi(jobs, n, n_in, x + static_cast<size_t>(r.row0) * n_in, r.n, r.tiles);
  }
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
}

namespace {

// RoPE of one head vector, with the table's magnitude on the rotated dims (YaRN, LongRoPE).
void rotate(float* v, const ModelConfig& c, const RopeTable& rope, int32_t pos) {
  rope_apply(v, c.head_dim, c.rope_dim, c.rope_layout, pos, rope.freqs.data());
  if (rope.mscale != 1.0f) {
    for (int j = 0; j < c.rope_dim; ++j) v[j] *= rope.mscale;
  }
}

// Output head over the rows that need logits: each sequence's last row, or all of its rows.
// Batched calls compute into scratch and scatter; a single sequence writes in place.
void output_logits(const Model& model, const SeqChunk* seqs, int n_seq, ForwardScratch& s) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  const int d = c.d_model;
  const size_t n_vocab = c.n_vocab;
  int n_out = 0;  // rows gathered into xn: [n_out, d_model]
  int row = 0;    // first row of the sequence in x
  std::vector<int> out_rows{0};  // [n_seq + 1] first logits row of each sequence
  for (int i = 0; i < n_seq; ++i) {
    const SeqChunk& q = seqs[i];
    for (int t = q.all_logits ? 0 : q.n_tok - 1; t < q.n_tok; ++t, ++n_out) {
      rmsnorm(s.x.data() + static_cast<size_t>(row + t) * d, w.output_norm, c.rms_eps, d,
              s.xn.data() + static_cast<size_t>(n_out) * d);
    }
    row += q.n_tok;
    out_rows.push_back(n_out);
  }
  float* out = seqs[0].logits;
  if (n_seq > 1) {
    s.logits.resize(static_cast<size_t>(n_out) * n_vocab);
    out = s.logits.data();
  }
  matmul_w(w.output, s.xn.data(), row_runs(out_rows), out);  // [n_out, n_vocab]
  if (c.final_logit_softcap > 0.0f) {
    const float cap = c.final_logit_softcap;
    const size_t n = static_cast<size_t>(n_out) * n_vocab;
    for (size_t i = 0; i < n; ++i) out[i] = cap * std::tanh(out[i] / cap);
  }
  if (n_seq == 1) return;
  const float* src = out;
  for (int i = 0; i < n_seq; ++i) {
    const size_t n = (seqs[i].all_logits ? seqs[i].n_tok : 1) * n_vocab;
    std::copy(src, src + n, seqs[i].logits);
    src += n;
  }
}

}  // namespace

void forward_batch(const Model& model, const SeqChunk* seqs, int n_seq, ForwardScratch& s) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  FASA_CHECK(n_seq > 0);
  std::vector<int> row0(n_seq + 1, 0);  // [n_seq + 1] first row of each sequence in x
  std::vector<int> first_slot(n_seq);   // [n_seq] where its new tokens go in its cache
  for (int i = 0; i < n_seq; ++i) {
    const SeqChunk& q = seqs[i];
    FASA_CHECK(q.n_tok > 0 && q.n_tok <= q.cache->max_batch());
    FASA_CHECK(q.cache->n_used() + q.n_tok <= q.cache->capacity());
    first_slot[i] = q.cache->n_used();
    row0[i + 1] = row0[i] + q.n_tok;
  }
  const int n_rows = row0[n_seq];
  const std::vector<RowRun> runs = row_runs(row0);
  s.reserve(c, n_rows);
  const int d = c.d_model, hd = c.head_dim;
  const int q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
  // The attention kernels scale q.k by 1/sqrt(head_dim); another model scale is folded into q.
  const float q_fold = c.attn_scale * std::sqrt(static_cast<float>(hd));

  // Embedding rows.  x: [n_rows, d_model]
  const size_t emb_row_bytes = w.tok_embd.n_bytes / static_cast<size_t>(w.tok_embd.n_out);
  for (int i = 0; i < n_seq; ++i) {
    for (int t = 0; t < seqs[i].n_tok; ++t) {
      float* xt = s.x.data() + static_cast<size_t>(row0[i] + t) * d;
      if (is_repacked(w.tok_embd.type)) {  // a tied output matrix, repacked at load
        dequantize_row_r16(w.tok_embd.type, w.tok_embd.data, d, seqs[i].tokens[t], xt);
      } else {
        const auto* row =
            static_cast<const uint8_t*>(w.tok_embd.data) + seqs[i].tokens[t] * emb_row_bytes;
        dequantize_row(w.tok_embd.type, row, xt, d);
      }
      if (c.embd_scale != 1.0f) {
        for (int j = 0; j < d; ++j) xt[j] *= c.embd_scale;
      }
    }
  }

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[l];
    const bool windowed = c.windowed(l);
    // Attention block.
    for (int t = 0; t < n_rows; ++t) {
      rmsnorm(s.x.data() + t * d, L.attn_norm, c.rms_eps, d, s.xn.data() + t * d);
    }
    // q: [n_rows, n_heads * head_dim]; k, v: [n_rows, n_kv_heads * head_dim]
    matmul_shared_x({{&L.wq, s.q.data()}, {&L.wk, s.k.data()}, {&L.wv, s.v.data()}}, s.xn.data(),
                    runs);
    if (c.qkv_bias) {
      for (int t = 0; t < n_rows; ++t) {
        add_inplace(s.q.data() + t * q_dim, L.bq, q_dim);
        add_inplace(s.k.data() + t * kv_dim, L.bk, kv_dim);
        add_inplace(s.v.data() + t * kv_dim, L.bv, kv_dim);
      }
    }
    for (int i = 0; i < n_seq; ++i) {
      const SeqChunk& sq = seqs[i];
      const RopeTable& rope = model.rope_table(sq.cache->capacity(), windowed);
      for (int t = 0; t < sq.n_tok; ++t) {
        const int r = row0[i] + t;
        for (int h = 0; h < c.n_heads; ++h) {
          float* qr = s.q.data() + r * q_dim + h * hd;
          if (c.qk_norm) rmsnorm(qr, L.q_norm, c.rms_eps, hd, qr);
          rotate(qr, c, rope, sq.pos[t]);
          if (q_fold != 1.0f) {
            for (int j = 0; j < hd; ++j) qr[j] *= q_fold;
          }
        }
        for (int g = 0; g < c.n_kv_heads; ++g) {
          float* kr = s.k.data() + r * kv_dim + g * hd;
          if (c.qk_norm) rmsnorm(kr, L.k_norm, c.rms_eps, hd, kr);
          rotate(kr, c, rope, sq.pos[t]);
          sq.cache->store(l, g, first_slot[i] + t, kr, s.v.data() + r * kv_dim + g * hd);
        }
      }
      // Sliding-window layers attend over their window, outside any policy.
      if (!windowed) sq.policy->on_append(*sq.cache, l, first_slot[i], sq.n_tok);
      AttnStep step;
      step.layer = l;
      step.n_tok = sq.n_tok;
      step.first_slot = first_slot[i];
      step.pos = sq.pos;
      step.q = s.q.data() + static_cast<size_t>(row0[i]) * q_dim;
      step.out = s.att.data() + static_cast<size_t>(row0[i]) * q_dim;
      attention_forward(step, *sq.cache, *sq.policy, sq.stats);
    }
    matmul_w(L.wo, s.att.data(), runs, s.proj.data());  // [n_rows, d_model]
    if (c.post_norms) {
      for (int t = 0; t < n_rows; ++t) {
        float* pt = s.proj.data() + t * d;
        rmsnorm(pt, L.attn_post_norm, c.rms_eps, d, pt);
      }
    }
    add_inplace(s.x.data(), s.proj.data(), static_cast<int64_t>(n_rows) * d);

    // Feed-forward block: act(gate) * up, act = SiLU (SwiGLU) or tanh-GELU (GeGLU).
    for (int t = 0; t < n_rows; ++t) {
      rmsnorm(s.x.data() + t * d, L.ffn_norm, c.rms_eps, d, s.xn.data() + t * d);
    }
    // gate, up: [n_rows, d_ff]
    matmul_shared_x({{&L.w_gate, s.gate.data()}, {&L.w_up, s.up.data()}}, s.xn.data(), runs);
    const int64_t n_ff = static_cast<int64_t>(n_rows) * c.d_ff;
    if (c.ffn_act == FfnAct::GeluTanh) {
      gelu_tanh_mul(s.gate.data(), s.up.data(), n_ff, s.gate.data());
    } else {
      silu_mul(s.gate.data(), s.up.data(), n_ff, s.gate.data());
    }
    matmul_w(L.w_down, s.gate.data(), runs, s.proj.data());  // [n_rows, d_model]
    if (c.post_norms) {
      for (int t = 0; t < n_rows; ++t) {
        float* pt = s.proj.data() + t * d;
        rmsnorm(pt, L.ffn_post_norm, c.rms_eps, d, pt);
      }
    }
    add_inplace(s.x.data(), s.proj.data(), static_cast<int64_t>(n_rows) * d);
  }
  for (int i = 0; i < n_seq; ++i) seqs[i].cache->commit(seqs[i].n_tok, seqs[i].pos);
  output_logits(model, seqs, n_seq, s);
}

void forward(const Model& model, KvCache& cache, AttentionPolicy& policy, const int32_t* tokens,
             const int32_t* pos, int n_tok, bool all_logits, float* logits,
             ForwardScratch& s, AttnStats* stats) {
  FASA_CHECK(n_tok > 0);
  // Sliding-window rings hold one call of up to max_batch tokens: longer runs are split.
  const int max_batch = cache.max_batch();
  const size_t n_vocab = model.config().n_vocab;
  for (int i = 0; i < n_tok; i += max_batch) {
    const int m = std::min(max_batch, n_tok - i);
    const bool last = i + m == n_tok;
    SeqChunk q{&cache, &policy, tokens + i, pos + i, m, all_logits, logits, stats};
    if (all_logits) {
      q.logits = logits + static_cast<size_t>(i) * n_vocab;
    } else if (!last) {
      thread_local std::vector<float> unused;  // logits of a piece nobody asked for
      unused.resize(n_vocab);
      q.logits = unused.data();
    }
    forward_batch(model, &q, 1, s);
  }
}

}  // namespace fasa
