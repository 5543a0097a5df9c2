#include "fasa/engine/lossless.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/engine/adaptive_k.h"
#include "fasa/engine/sampler.h"

namespace fasa {

static_assert(AdaptiveK::kMaxK == LosslessOptions::kMaxK);
static_assert(LosslessOptions::kMaxK + 1 == Session::kMaxVerify);

LosslessStats& LosslessStats::operator+=(const LosslessStats& o) {
  verifications += o.verifications;
  drafted += o.drafted;
  accepted += o.accepted;
  tokens += o.tokens;
  draft_kv_bytes += o.draft_kv_bytes;
  verify_kv_bytes += o.verify_kv_bytes;
  draft_ms += o.draft_ms;
  verify_ms += o.verify_ms;
  return *this;
}

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

namespace {

// Draw from max(0, q - p) renormalized (speculative sampling's correction); q itself when the
// difference has no mass left (p == q up to rounding).
int32_t draw_residual(Sampler& sampler, const TokenDist& q, const TokenDist& p, TokenDist* r) {
  r->ids.clear();
  r->w.clear();
  r->sum = 0.0;
  for (size_t i = 0; i < q.ids.size(); ++i) {
    const double w = std::max(0.0, q.w[i] / q.sum - p.prob(q.ids[i]));
    if (w <= 0.0) continue;
    r->ids.push_back(q.ids[i]);
    r->w.push_back(w);
    r->sum += w;
  }
  return r->ids.empty() ? sampler.draw(q) : sampler.draw(*r);
}

}  // namespace

LosslessGeneration::LosslessGeneration(Session& s, const GenerateOptions& opts,
                                       const LosslessOptions& lo)
    : s_(s),
      opts_(opts),
      lo_(lo),
      gen_(s.model().require_tokenizer(), opts),
      sampler_(SamplerParams{opts.sampler.temp, opts.sampler.top_k, opts.sampler.top_p,
                             opts.sampler.min_p, opts.sampler.seed ^ 0x9e3779b97f4a7c15ull}),
      n_vocab_(s.model().config().n_vocab),
      adaptive_(std::make_unique<AdaptiveK>()) {
  if (lo.k < 1) fail("lossless decoding needs K >= 1 drafts (got {})", lo.k);
  opts.sampler.validate();
  if (s.cache().tiered()) {
    fail("--lossless cannot take back drafts in a tiered KV cache (FASA-M, variant=m)");
  }
  if (!lo.adaptive && s.cache().max_batch() < lo.k + 1) {
    fail("--lossless {} verifies {} tokens at once: the prefill chunk must be at least that", lo.k,
         lo.k + 1);
  }
  if (s.n_past() == 0) fail("nothing to continue from: the session holds no tokens");
}

LosslessGeneration::~LosslessGeneration() = default;

std::string LosslessGeneration::start() {
  FASA_CHECK(!started_);
  started_ = true;
  const std::string piece = gen_.step(s_.last_logits().data(), n_vocab_, s_.n_past() < s_.n_ctx());
  st_.tokens = static_cast<int64_t>(gen_.tokens().size());
  return piece;
}

int LosslessGeneration::choose_k() const {
  const int free = s_.n_ctx() - s_.n_past();  // >= 1: the pending token has room
  const int64_t n_max = opts_.n_predict;
  const int64_t left = n_max < 0 ? INT_MAX : n_max - static_cast<int64_t>(gen_.tokens().size());
  const int k = std::min(lo_.adaptive ? adaptive_->next() : lo_.k, s_.cache().max_batch() - 1);
  // x and k drafts must fit the context, and x, the kept drafts and one more the token limit.
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>({k, free - 1, left - 1})));
}

void LosslessGeneration::draft(int32_t x, int k) {
  const uint64_t bytes0 = s_.attn_stats().bytes_read();
  s_.save_point();
  int32_t prev = x;
  for (int i = 0; i < k; ++i) {
    const std::vector<float>& logits = s_.decode(prev);
    sampler_.distribution(logits.data(), n_vocab_, &p_[i]);
    prev = drafts_[i] = sampler_.draw(p_[i]);
  }
  s_.rollback();
  st_.draft_kv_bytes += s_.attn_stats().bytes_read() - bytes0;
}

std::string LosslessGeneration::cycle() {
  FASA_CHECK(started_ && !gen_.done());
  const int32_t x = gen_.next_token();
  const int k = choose_k(), n0 = s_.n_past();
  p_.resize(std::max<size_t>(p_.size(), k));
  drafts_.resize(k + 1);
  auto t0 = std::chrono::steady_clock::now();
  if (k > 0) draft(x, k);
  const double draft_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> tokens(1, x);  // [k + 1]
  tokens.insert(tokens.end(), drafts_.begin(), drafts_.begin() + k);
  vlogits_.resize(static_cast<size_t>(k + 1) * n_vocab_);
  s_.verify(tokens.data(), k + 1, vlogits_.data());
  st_.verify_kv_bytes += s_.cache().used_bytes();
  const double verify_ms = ms_since(t0);
  std::string text;
  int kept = 0;
  int32_t next = -1;
  for (; kept < k && !gen_.done(); ++kept) {
    sampler_.distribution(row(kept), n_vocab_, &q_);
    if (!accepts(q_, p_[kept], drafts_[kept])) {
      next = draw_residual(sampler_, q_, p_[kept], &r_);
      break;
    }
    text += gen_.accept(drafts_[kept], n0 + 1 + kept < s_.n_ctx());
  }
  if (next < 0 && !gen_.done()) {
    sampler_.distribution(row(k), n_vocab_, &q_);
    next = sampler_.draw(q_);
  }
  s_.keep_verified(1 + kept);
  if (!gen_.done()) text += gen_.accept(next, s_.n_past() < s_.n_ctx());
  st_.verifications += 1;
  st_.drafted += k;
  st_.accepted += kept;
  st_.draft_ms += draft_ms;
  st_.verify_ms += verify_ms;
  st_.tokens = static_cast<int64_t>(gen_.tokens().size());
  adaptive_->observe(k, kept, draft_ms, verify_ms);
  return text;
}

bool LosslessGeneration::accepts(const TokenDist& q, const TokenDist& p, int32_t d) {
  if (sampler_.greedy()) return q.ids[0] == d;
  const double pd = p.prob(d), qd = q.prob(d);
  if (qd >= pd) return true;
  return sampler_.uniform() < qd / pd;
}

GenerateResult generate_lossless(Session& session, const GenerateOptions& opts,
                                 const LosslessOptions& lossless,
                                 const std::function<void(std::string_view)>& on_text,
                                 LosslessStats* stats) {
  if (lossless.k < 1) return generate_from_prefilled(session, opts, on_text);
  LosslessGeneration g(session, opts, lossless);
  GenerateResult r;
  r.n_prompt = session.n_past();
  auto emit = [&](const std::string& piece) {
    if (!piece.empty() && on_text) on_text(piece);
  };
  const auto t0 = std::chrono::steady_clock::now();
  emit(g.start());
  while (!g.done()) emit(g.cycle());
  r.tokens = g.generation().tokens();
  r.text = g.generation().text();
  r.stop_reason = g.generation().stop_reason();
  r.decode_ms = ms_since(t0);
  if (stats) *stats += g.stats();
  return r;
}

GenerateResult generate_lossless(Session& session, const std::vector<int32_t>& prompt,
                                 const GenerateOptions& opts, const LosslessOptions& lossless,
                                 const std::function<void(std::string_view)>& on_text,
                                 LosslessStats* stats) {
  return prefill_then(session, prompt, opts,
                      [&] { return generate_lossless(session, opts, lossless, on_text, stats); });
}

}  // namespace fasa
