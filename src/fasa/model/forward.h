// The forward pass of the llama family and Gemma 3, as named steps (see
// forward.cpp); the config's switches (biases, QK-norm, post-norms, activation, windows) say
// which steps a layer takes.
#pragma once

#include <cstdint>
#include <vector>

#include "fasa/attention/attention.h"
#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/core/workspace.h"
#include "fasa/model/model.h"

namespace fasa {

// Activations of one chunk, owned by the sequence and reused across calls.
struct ForwardScratch {
  int n_tok_cap = 0;
  std::vector<float> x;     // [n_tok, d_model] residual stream
  std::vector<float> xn;    // [n_tok, d_model] normed
  std::vector<float> q;     // [n_tok, n_heads * head_dim]
  std::vector<float> k;     // [n_tok, n_kv_heads * head_dim]
  std::vector<float> v;     // [n_tok, n_kv_heads * head_dim]
  std::vector<float> att;   // [n_tok, n_heads * head_dim]
  std::vector<float> proj;  // [n_tok, d_model]
  std::vector<float> gate;  // [n_tok, d_ff]
  std::vector<float> up;    // [n_tok, d_ff]
  std::vector<float>
      logits;  // [n_seq_out, n_vocab] batched calls' logits before they are scattered
  void reserve(const ModelConfig& c, int n_tok);

  // A team's per-worker rows (decode-sized calls run as one team: forward.cpp). Every worker
  // keeps its own residual stream and the values computed from it element-wise, so no worker waits
  // for another's element-wise work; worker 0's are x, xn and act.
  struct WorkerRows {
    std::vector<float> x;    // [n_tok, d_model] this worker's copy of the residual stream
    std::vector<float> xn;   // [n_tok, d_model] normed
    std::vector<float> act;  // [n_tok, d_ff] act(gate) * up
  };
  std::vector<float> act;         // [n_tok, d_ff] worker 0's act(gate) * up in a team
  std::vector<WorkerRows> peers;  // [workers - 1] workers 1 ..
  void reserve_team(const ModelConfig& c, int n_tok, int n_workers);

  // Every other buffer the steps of a call use (matmul activations and rows, attention tiles, a policy's
  // scores, FASA-M's fetched rows): bound while forward/forward_batch run, each thread's arena
  // reserved for forward_workspace_bytes of the largest call and context so far.
  Workspace work;
  size_t work_bytes = 0;  // per arena, reserved
  void reserve_work(const ModelConfig& c, int n_tok, int n_ctx, int n_workers);
};

// Scratch bytes one thread's arena needs for a call of n_tok rows over a context of n_ctx slots.
size_t forward_workspace_bytes(const ModelConfig& c, int n_tok, int n_ctx);

// One sequence's part of a batched forward call: its cache, policy (with its facets, looked up
// once by the caller) and new tokens.
struct SeqChunk {
  KvCache* cache = nullptr;
  const PolicyFacets* policy = nullptr;
  const int32_t* tokens = nullptr;  // [n_tok]
  const int32_t* pos = nullptr;     // [n_tok]
  int n_tok = 0;                    // 1 .. cache->max_batch()
  bool all_logits = false;
  float* logits = nullptr;     // [n_vocab], or [n_tok, n_vocab] with all_logits
  AttnStats* stats = nullptr;  // may be null
};

// Runs several sequences' chunks in one pass: the token-wise work (norms, projections, the
// feed-forward block, the output head) runs over all their rows at once, so the weights are read
// once per call; attention runs per sequence, over its own cache with its own policy. Each
// sequence's results equal, bit for bit, a forward() of its chunk alone (matmul rows do not
// depend on the other rows: kernels/matmul.h). Chunks must fit their caches (callers check).
void forward_batch(const Model& model, const SeqChunk* seqs, int n_seq, ForwardScratch& scratch);

// Runs tokens[0..n_tok) at positions pos[0..n_tok): appends their K/V to `cache` (slots from
// cache.n_used()) and commits them. Writes logits of the last token ([n_vocab]) or, with
// `all_logits`, of every token ([n_tok, n_vocab]). Token ids must be in [0, n_vocab) and the
// cache must have room; callers check both. More than cache.max_batch() tokens run as several
// calls of at most that many.
void forward(const Model& model, KvCache& cache, const PolicyFacets& policy, const int32_t* tokens,
             const int32_t* pos, int n_tok, bool all_logits, float* logits, ForwardScratch& scratch,
             AttnStats* stats);

}  // namespace fasa
