#include "fasa/eval/perplexity.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/engine/sampler.h"
#include "fasa/eval/shared_prefill.h"

namespace fasa {

double log_prob(const float* logits, int n_vocab, int32_t target) {
  float mx = logits[0];
  for (int i = 1; i < n_vocab; ++i) mx = logits[i] > mx ? logits[i] : mx;
  double sum = 0.0;
  for (int i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  return static_cast<double>(logits[target]) - mx - std::log(sum);
}

namespace {

// The number of chunks to score; bad options fail here.
int checked_chunks(const std::vector<int32_t>& tokens, const PplOptions& o) {
  if (o.n_ctx < 4) fail("--ctx must be at least 4 (got {})", o.n_ctx);
  if (o.batch < 1) fail("batch must be >= 1 (got {})", o.batch);
  if (o.n_chunks < 0) fail("--chunks must be >= 0 (got {})", o.n_chunks);
  if (o.n_decode < 0 || o.n_decode >= o.n_ctx) {
    fail("--decode must be in [0, --ctx) (got {} with --ctx {})", o.n_decode, o.n_ctx);
  }
  const int64_t n_avail = static_cast<int64_t>(tokens.size()) / o.n_ctx;
  if (n_avail == 0) {
    fail("the text has {} tokens, fewer than one chunk of {} (lower --ctx)", tokens.size(),
         o.n_ctx);
  }
  if (o.n_chunks > n_avail) {
    fail("--chunks {} needs {} tokens but the text has only {} ({} whole chunks)", o.n_chunks,
         int64_t{o.n_chunks} * o.n_ctx, tokens.size(), n_avail);
  }
  return o.n_chunks > 0 ? o.n_chunks : static_cast<int>(n_avail);
}

// opts.policy, then every opts.compare spec.
std::vector<std::string> specs_of(const PplOptions& o) {
  std::vector<std::string> specs{o.policy};
  specs.insert(specs.end(), o.compare.begin(), o.compare.end());
  if (specs.size() > 1 && o.n_decode == 0) {
    fail("comparing policies in one run needs --decode D (policies act only at decode steps)");
  }
  return specs;
}

// The steps of one run over the chunks, over perplexity_all's state: a session per policy, kept
// across chunks (reset for each), and the sums each policy's result is made of.
struct PplRun {
  const PplOptions& o;
  const int n_vocab;
  const SharedPrefill& shared;
  std::vector<std::unique_ptr<Session>>& sessions;  // [n_specs]
  std::vector<PplResult>& results;                  // [n_specs]
  std::vector<double>& nll;                         // [n_specs] sums of -log p
  std::vector<double>& nll2;                        // [n_specs] sums of its square

  void score(size_t p, const float* logits, int32_t next) {
    results[p].argmax.push_back(argmax(logits, n_vocab));
    const double v = -log_prob(logits, n_vocab, next);
    nll[p] += v;
    nll2[p] += v * v;
    ++results[p].n_scored;
  }

  // The decode protocol: a dense prefill of the prefix (once: the other policies' sessions copy
  // it, which is exactly what their own dense prefill would compute; a prefill-aware policy
  // takes its statistics from the same prefill, eval/shared_prefill.h), then D policy-driven
  // decode steps per policy, each scored.
  void decode_chunk(const std::vector<int32_t>& chunk) {  // chunk: [n_ctx]
    const int n_prefix = o.n_ctx - o.n_decode;
    PromptPrefill prompt(shared, std::vector<int32_t>(chunk.begin(), chunk.begin() + n_prefix),
                         PromptPrefill::Sources::Started);
    for (size_t p = 0; p < sessions.size(); ++p) prompt.start(p, *sessions[p]);
    for (size_t p = 0; p < sessions.size(); ++p) {
      Session& session = *sessions[p];
      const std::vector<float>* logits = &session.last_logits();
      for (int i = n_prefix; i < o.n_ctx; ++i) {
        score(p, logits->data(), chunk[i]);
        if (i + 1 < o.n_ctx) logits = &session.decode(chunk[i]);
      }
    }
  }

  // llama-perplexity's protocol: the second half scored. One batch at a time, so only
  // [batch, n_vocab] logits are ever held (a 32K-token chunk of a 262K vocabulary would be
  // 34 GB at once).
  void batch_chunk(const std::vector<int32_t>& chunk) {  // chunk: [n_ctx]
    const int first = o.n_ctx / 2;
    for (int i0 = 0; i0 < o.n_ctx; i0 += o.batch) {
      const int i1 = std::min(o.n_ctx, i0 + o.batch);
      const std::vector<float> logits =
          sessions[0]->eval_all(std::vector<int32_t>(chunk.begin() + i0, chunk.begin() + i1),
                                o.batch);  // [i1 - i0, n_vocab]
      for (int i = i0; i < i1; ++i) {
        const float* row = logits.data() + static_cast<size_t>(i - i0) * n_vocab;
        if (i >= first && i < o.n_ctx - 1) {
          score(0, row, chunk[i + 1]);
        } else {
          results[0].argmax.push_back(argmax(row, n_vocab));
        }
      }
    }
  }

  void finish(const std::vector<std::string>& specs, int n_chunks, double seconds) {
    for (size_t p = 0; p < results.size(); ++p) {
      PplResult& r = results[p];
      const double n = static_cast<double>(r.n_scored);
      r.policy = specs[p];
      r.mean_nll = nll[p] / n;
      r.ppl = std::exp(r.mean_nll);
      const double var = nll2[p] / n - r.mean_nll * r.mean_nll;
      r.ppl_se = (var > 0.0 && n > 1) ? std::sqrt(var / (n - 1)) * r.ppl : 0.0;
      r.n_chunks = n_chunks;
      r.seconds = seconds;
    }
  }
};

}  // namespace

std::vector<PplResult> perplexity_all(const std::shared_ptr<const Model>& model,
                                      const std::vector<int32_t>& tokens, const PplOptions& o,
                                      const std::function<void(int, int)>& progress) {
  const int n_chunks = checked_chunks(tokens, o);
  const std::vector<std::string> specs = specs_of(o);
  SessionOptions so;
  so.n_ctx = o.n_ctx;
  so.kv_type = o.kv_type;
  so.prefill_chunk = o.batch;
  const PolicyContext pctx = policy_context(model);  // (the model file is hashed once)
  std::vector<std::unique_ptr<Session>> sessions;
  for (const std::string& spec : specs) {
    so.policy = spec;
    sessions.push_back(std::make_unique<Session>(model, so, pctx));
  }
  const SharedPrefill shared(model, specs, so, pctx);

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<PplResult> results(specs.size());
  std::vector<double> nll(specs.size(), 0.0), nll2(specs.size(), 0.0);
  for (PplResult& r : results) {
    r.n_tokens = static_cast<int64_t>(tokens.size());
    r.argmax.reserve(static_cast<size_t>(n_chunks) * o.n_ctx);
  }
  PplRun run{o, model->config().n_vocab, shared, sessions, results, nll, nll2};
  for (int c = 0; c < n_chunks; ++c) {
    for (auto& s : sessions) s->reset();
    std::vector<int32_t> chunk(tokens.begin() + int64_t{c} * o.n_ctx,
                               tokens.begin() + int64_t{c + 1} * o.n_ctx);  // [n_ctx]
    if (o.chunk_bos >= 0) chunk[0] = o.chunk_bos;
    if (o.n_decode > 0) {
      run.decode_chunk(chunk);
    } else {
      run.batch_chunk(chunk);
    }
    for (size_t p = 0; p < sessions.size(); ++p) {
      PplResult& r = results[p];
      r.attn += sessions[p]->attn_stats();
      r.chunk_ppl.push_back(std::exp(nll[p] / static_cast<double>(r.n_scored)));
    }
    if (progress) progress(c + 1, n_chunks);
  }
  run.finish(specs, n_chunks,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return results;
}

PplResult perplexity(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& tokens,
                     const PplOptions& o, const std::function<void(int, int)>& progress) {
  PplOptions one = o;
  one.compare.clear();
  return perplexity_all(model, tokens, one, progress)[0];
}

}  // namespace fasa
