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

void ForwardScratch::reserve_team(const ModelConfig& c, int n_tok, int n_workers) {
  const size_t n = static_cast<size_t>(n_tok);
  if (act.size() < n * c.d_ff) act.resize(n * c.d_ff);
  if (static_cast<int>(peers.size()) < n_workers - 1) peers.resize(n_workers - 1);
  for (WorkerRows& p : peers) {  // a worker added later starts empty: size each one
    if (p.x.size() >= n * c.d_model) continue;
    p.x.resize(n * c.d_model);
    p.xn.resize(n * c.d_model);
    p.act.resize(n * c.d_ff);
  }
}

size_t forward_workspace_bytes(const ModelConfig& c, int n_tok, int n_ctx) {
  const size_t t = n_tok, ctx = n_ctx, width = std::max(c.d_model, c.d_ff);
  const size_t rows = t * width * sizeof(float);          // matmul_multi's rows of one matrix
  const size_t scores = ctx * c.n_heads * sizeof(float);  // a policy's per-head scores
  return rows + scores + (size_t{1} << 20);  // + attention tiles, unpacked weight blocks, lists
}

void ForwardScratch::reserve_work(const ModelConfig& c, int n_tok, int n_ctx, int n_workers) {
  const size_t bytes = forward_workspace_bytes(c, n_tok, n_ctx);
  if (bytes <= work_bytes) return;
  work_bytes = bytes;
  work.reserve(bytes, n_workers);
}

namespace {

// RoPE of one head vector, with the table's magnitude on the rotated dims (YaRN, LongRoPE).
void rotate(float* v, const ModelConfig& c, const RopeTable& rope, int32_t pos) {
  rope_apply(v, c.head_dim, c.rope_dim, c.rope_layout, pos, rope.freqs.data());
  if (rope.mscale != 1.0f) {
    for (int j = 0; j < c.rope_dim; ++j) v[j] *= rope.mscale;
  }
}

// Calls with fewer rows than this run as one team (core/parallel.h: one dispatch for the whole
// call, workers meeting at barriers): decode steps and short batches, whose parallel steps last
// microseconds. Longer calls (prefill chunks, with the batched AMX tiles) open a region per step,
// each lasting milliseconds, and keep one copy of the rows.
constexpr int kTeamMaxRows = static_cast<int>(kAmxMinTokens) - 1;

// One forward call's shape, shared by its steps.
struct Call {
  const Model& model;
  const ModelConfig& c;
  const SeqChunk* seqs;
  int n_seq;
  std::vector<int> row0;        // [n_seq + 1] first row of each sequence in x
  std::vector<int> first_slot;  // [n_seq] where its new tokens go in its cache
  int n_rows = 0;
  std::vector<RowRun> runs;
  ForwardScratch& s;
};

// This worker's rows: its own in a team, the scratch's own otherwise (worker 0).
struct Rows {
  float* x;    // [n_rows, d_model] residual stream
  float* xn;   // [n_rows, d_model] normed
  float* act;  // [n_rows, d_ff] act(gate) * up
};

Rows worker_rows(ForwardScratch& s) {
  const int w = team_worker();
  if (w > 0) {
    ForwardScratch::WorkerRows& p = s.peers[w - 1];
    return {p.x.data(), p.xn.data(), p.act.data()};
  }
  // A team's other workers read gate while worker 0 computes its act: not in place then.
  return {s.x.data(), s.xn.data(), team_size() > 1 ? s.act.data() : s.gate.data()};
}

// Embedding rows into this worker's x.
void embed(const Call& k, const Rows& r) {
  const ModelConfig& c = k.c;
  const WeightMatrix& emb = k.model.weights().tok_embd;
  const int d = c.d_model;
  const size_t emb_row_bytes = emb.n_bytes / static_cast<size_t>(emb.n_out);
  for (int i = 0; i < k.n_seq; ++i) {
    for (int t = 0; t < k.seqs[i].n_tok; ++t) {
      float* xt = r.x + static_cast<size_t>(k.row0[i] + t) * d;
      if (is_repacked(emb.type)) {  // a tied output matrix, repacked at load
        dequantize_row_r16(emb.type, emb.data, d, k.seqs[i].tokens[t], xt);
      } else {
        const auto* row =
            static_cast<const uint8_t*>(emb.data) + k.seqs[i].tokens[t] * emb_row_bytes;
        dequantize_row(emb.type, row, xt, d);
      }
      if (c.embd_scale != 1.0f) {
        for (int j = 0; j < d; ++j) xt[j] *= c.embd_scale;
      }
    }
  }
}

void norm_rows(const Call& k, const float* x, const float* weight, float* out) {
  const int d = k.c.d_model;
  for (int t = 0; t < k.n_rows; ++t) {
    rmsnorm(x + static_cast<size_t>(t) * d, weight, k.c.rms_eps, d,
            out + static_cast<size_t>(t) * d);
  }
}

// x += proj, or x += rmsnorm(proj) with post-norms (normed into this worker's xn; proj is shared).
void add_residual(const Call& k, const Rows& r, const float* post_norm) {
  const int64_t n = static_cast<int64_t>(k.n_rows) * k.c.d_model;
  if (k.c.post_norms) {
    norm_rows(k, k.s.proj.data(), post_norm, r.xn);
    add_inplace(r.x, r.xn, n);
  } else {
    add_inplace(r.x, k.s.proj.data(), n);
  }
}

// Biases, QK-norm, RoPE and the new K/V of layer l, then each sequence's attention into att.
// Writes shared buffers and caches: runs on one worker (team_single).
void attend(const Call& k, int l) {
  const ModelConfig& c = k.c;
  const LayerWeights& L = k.model.weights().layers[l];
  ForwardScratch& s = k.s;
  const bool windowed = c.windowed(l);
  const int hd = c.head_dim;
  const int q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
  // The attention kernels scale q.k by 1/sqrt(head_dim); another model scale is folded into q.
  const float q_fold = c.attn_scale * std::sqrt(static_cast<float>(hd));
  if (c.qkv_bias) {
    for (int t = 0; t < k.n_rows; ++t) {
      add_inplace(s.q.data() + t * q_dim, L.bq, q_dim);
      add_inplace(s.k.data() + t * kv_dim, L.bk, kv_dim);
      add_inplace(s.v.data() + t * kv_dim, L.bv, kv_dim);
    }
  }
  for (int i = 0; i < k.n_seq; ++i) {
    const SeqChunk& sq = k.seqs[i];
    const RopeTable& rope = k.model.rope_table(sq.cache->capacity(), windowed);
    for (int t = 0; t < sq.n_tok; ++t) {
      const int r = k.row0[i] + t;
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
        sq.cache->store(l, g, k.first_slot[i] + t, kr, s.v.data() + r * kv_dim + g * hd);
      }
    }
    // Sliding-window layers attend over their window, outside any policy.
    if (!windowed) sq.policy->core->on_append(*sq.cache, l, k.first_slot[i], sq.n_tok);
    AttnStep step;
    step.layer = l;
    step.n_tok = sq.n_tok;
    step.first_slot = k.first_slot[i];
    step.pos = sq.pos;
    step.q = s.q.data() + static_cast<size_t>(k.row0[i]) * q_dim;
    step.out = s.att.data() + static_cast<size_t>(k.row0[i]) * q_dim;
    attention_forward(step, *sq.cache, *sq.policy, sq.stats);
  }
}

// One transformer layer. Collective in a team: the projections split their rows over the
// workers, attention runs on worker 0 (its kernels served by the others), and each worker
// repeats the element-wise steps on its own rows.
void layer(const Call& k, const Rows& r, int l) {
  const LayerWeights& L = k.model.weights().layers[l];
  ForwardScratch& s = k.s;
  // Attention block. q: [n_rows, n_heads * head_dim]; k, v: [n_rows, n_kv_heads * head_dim]
  norm_rows(k, r.x, L.attn_norm, r.xn);
  matmul_shared_x({{&L.wq, s.q.data()}, {&L.wk, s.k.data()}, {&L.wv, s.v.data()}}, r.xn, k.runs);
  team_single([&] { attend(k, l); });
  matmul_w(L.wo, s.att.data(), k.runs, s.proj.data());  // [n_rows, d_model]
  add_residual(k, r, L.attn_post_norm);

  // Feed-forward block: act(gate) * up, act = SiLU (SwiGLU) or tanh-GELU (GeGLU).
  norm_rows(k, r.x, L.ffn_norm, r.xn);
  // gate, up: [n_rows, d_ff]
  matmul_shared_x({{&L.w_gate, s.gate.data()}, {&L.w_up, s.up.data()}}, r.xn, k.runs);
  const int64_t n_ff = static_cast<int64_t>(k.n_rows) * k.c.d_ff;
  if (k.c.ffn_act == FfnAct::GeluTanh) {
    gelu_tanh_mul(s.gate.data(), s.up.data(), n_ff, r.act);
  } else {
    silu_mul(s.gate.data(), s.up.data(), n_ff, r.act);
  }
  matmul_w(L.w_down, r.act, k.runs, s.proj.data());  // [n_rows, d_model]
  add_residual(k, r, L.ffn_post_norm);
}

// Output head over the rows that need logits: each sequence's last row, or all of its rows.
// Batched calls compute into scratch (sized by the caller) and scatter; a single sequence writes
// in place.
void output_logits(const Call& k, const Rows& r) {
  const ModelConfig& c = k.c;
  const ModelWeights& w = k.model.weights();
  const int d = c.d_model;
  const size_t n_vocab = c.n_vocab;
  int n_out = 0;                 // rows gathered into xn: [n_out, d_model]
  int row = 0;                   // first row of the sequence in x
  std::vector<int> out_rows{0};  // [n_seq + 1] first logits row of each sequence
  for (int i = 0; i < k.n_seq; ++i) {
    const SeqChunk& q = k.seqs[i];
    for (int t = q.all_logits ? 0 : q.n_tok - 1; t < q.n_tok; ++t, ++n_out) {
      rmsnorm(r.x + static_cast<size_t>(row + t) * d, w.output_norm, c.rms_eps, d,
              r.xn + static_cast<size_t>(n_out) * d);
    }
    row += q.n_tok;
    out_rows.push_back(n_out);
  }
  float* out = k.n_seq > 1 ? k.s.logits.data() : k.seqs[0].logits;
  matmul_w(w.output, r.xn, row_runs(out_rows), out);  // [n_out, n_vocab]
  if (c.final_logit_softcap > 0.0f) {
    const float cap = c.final_logit_softcap;
    parallel_ranges(static_cast<int64_t>(n_out) * n_vocab, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) out[i] = cap * std::tanh(out[i] / cap);
    });
  }
  if (k.n_seq == 1) return;
  team_single([&] {
    const float* src = out;
    for (int i = 0; i < k.n_seq; ++i) {
      const size_t n = (k.seqs[i].all_logits ? k.seqs[i].n_tok : 1) * n_vocab;
      std::copy(src, src + n, k.seqs[i].logits);
      src += n;
    }
  });
}

// Rows of logits a call writes: every row of an all_logits sequence, the last row of the others.
int logit_rows(const SeqChunk* seqs, int n_seq) {
  int n = 0;
  for (int i = 0; i < n_seq; ++i) n += seqs[i].all_logits ? seqs[i].n_tok : 1;
  return n;
}

}  // namespace

void forward_batch(const Model& model, const SeqChunk* seqs, int n_seq, ForwardScratch& s) {
  const ModelConfig& c = model.config();
  FASA_CHECK(n_seq > 0);
  Call k{model, c, seqs, n_seq, std::vector<int>(n_seq + 1, 0), std::vector<int>(n_seq), 0, {}, s};
  for (int i = 0; i < n_seq; ++i) {
    const SeqChunk& q = seqs[i];
    FASA_CHECK(q.n_tok > 0 && q.n_tok <= q.cache->max_batch());
    FASA_CHECK(q.cache->n_used() + q.n_tok <= q.cache->capacity());
    k.first_slot[i] = q.cache->n_used();
    k.row0[i + 1] = k.row0[i] + q.n_tok;
  }
  k.n_rows = k.row0[n_seq];
  k.runs = row_runs(k.row0);
  s.reserve(c, k.n_rows);
  int n_ctx = 0;
  for (int i = 0; i < n_seq; ++i) n_ctx = std::max(n_ctx, seqs[i].cache->capacity());
  s.reserve_work(c, k.n_rows, n_ctx, num_threads());
  WorkspaceScope bind(s.work);
  if (n_seq > 1) s.logits.resize(static_cast<size_t>(logit_rows(seqs, n_seq)) * c.n_vocab);
  const bool team = k.n_rows <= kTeamMaxRows && num_threads() > 1;
  if (team) s.reserve_team(c, k.n_rows, num_threads());

  auto body = [&] {
    const Rows r = worker_rows(s);
    embed(k, r);
    for (int l = 0; l < c.n_layers; ++l) layer(k, r, l);
    team_single([&] {
      for (int i = 0; i < n_seq; ++i) seqs[i].cache->commit(seqs[i].n_tok, seqs[i].pos);
    });
    output_logits(k, r);
  };
  if (team) {
    parallel_team(body);
  } else {
    body();
  }
}

void forward(const Model& model, KvCache& cache, const PolicyFacets& policy, const int32_t* tokens,
             const int32_t* pos, int n_tok, bool all_logits, float* logits, ForwardScratch& s,
             AttnStats* stats) {
  FASA_CHECK(n_tok > 0);
  // Sliding-window rings hold one call of up to max_batch tokens: longer runs are split.
  const int max_batch = cache.max_batch();
  const size_t n_vocab = model.config().n_vocab;
  WorkspaceScope bind(s.work);
  std::optional<ScratchFrame> f;
  float* unused = nullptr;  // [n_vocab] logits of the pieces before the last: nobody asked
  if (n_tok > max_batch && !all_logits) unused = f.emplace().take<float>(n_vocab);
  for (int i = 0; i < n_tok; i += max_batch) {
    const int m = std::min(max_batch, n_tok - i);
    const bool last = i + m == n_tok;
    SeqChunk q{&cache, &policy, tokens + i, pos + i, m, all_logits, logits, stats};
    if (all_logits) {
      q.logits = logits + static_cast<size_t>(i) * n_vocab;
    } else if (!last) {
      q.logits = unused;
    }
    forward_batch(model, &q, 1, s);
  }
}

}  // namespace fasa
