// Perplexity over consecutive chunks of a token stream. Each chunk of n_ctx tokens starts from an
// empty cache. Two protocols:
//  - n_decode == 0 (llama-perplexity's convention): the chunk is evaluated in batches and the
//    second half is scored (logits at positions n_ctx/2 .. n_ctx-2 predicting the next token);
//  - n_decode == D > 0 (the paper's PG-19 protocol): the first n_ctx - D tokens are prefilled
//    densely, then the last D tokens are teacher-forced one decode step at a time with the
//    attention policy active, and those D predictions are scored.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fasa/engine/session.h"
#include "fasa/model/model.h"

namespace fasa {

struct PplOptions {
  int n_ctx = 512;
  int n_chunks = 0;  // 0 = every whole chunk in the text
  int n_decode = 0;  // D: score D policy-driven decode steps per chunk (0 = off)
  int batch = 512;   // tokens per forward while evaluating a chunk (and logits held)
  // >= 0: every chunk's first token becomes this id (llama-perplexity does this with BOS for
  // models that add one, so each chunk starts like a fresh prompt); -1 = tokens as given.
  int32_t chunk_bos = -1;
  KvType kv_type = KvType::F16;
  std::string policy = "full";
  std::vector<std::string> compare;  // more policy specs scored on the same chunks (n_decode > 0)
};

struct PplResult {
  std::string policy;
  double ppl = 0.0;
  double ppl_se = 0.0;  // standard error of the perplexity estimate
  double mean_nll = 0.0;
  int n_chunks = 0;
  int64_t n_scored = 0;           // predictions scored
  int64_t n_tokens = 0;           // tokens in the text
  std::vector<double> chunk_ppl;  // [n_chunks] running perplexity after each chunk
  // Top-1 prediction at every evaluated position: [n_chunks * n_ctx] (or [n_chunks * D] with
  // n_decode, for the scored positions only).
  std::vector<int32_t> argmax;
  AttnStats attn;  // decode-step reads (n_decode mode)
  double seconds = 0.0;
};

// `progress(done, total)` is called after each chunk (may be null). Throws fasa::Error when the
// text is shorter than one chunk or the options are out of range.
PplResult perplexity(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& tokens,
                     const PplOptions& opts, const std::function<void(int, int)>& progress);
// opts.policy, then every opts.compare policy, on the same chunks: [1 + compare.size()]. Each
// chunk's dense prefix is computed once and copied into the other policies' sessions.
std::vector<PplResult> perplexity_all(const std::shared_ptr<const Model>& model,
                                      const std::vector<int32_t>& tokens, const PplOptions& opts,
                                      const std::function<void(int, int)>& progress);

// log p(target) under softmax(logits); logits: [n_vocab]
double log_prob(const float* logits, int n_vocab, int32_t target);

}  // namespace fasa
