#include "fasa/engine/generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "fasa/core/error.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

const char* name(StopReason r) {
  switch (r) {
    case StopReason::None: return "none";
    case StopReason::Eos: return "eos";
    case StopReason::Stop: return "stop";
    case StopReason::Length: return "length";
    case StopReason::Context: return "context";
    case StopReason::Done: return "done";
  }
  return "?";
}

bool scan_stop_strings(std::string& pending, const std::vector<std::string>& stop,
                       std::string* ready) {
  size_t first = std::string::npos;
  for (const auto& s : stop) {
    if (s.empty()) continue;
    first = std::min(first, pending.find(s));
  }
  if (first != std::string::npos) {
    *ready = pending.substr(0, first);
    pending.clear();
    return true;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const auto& s : stop) {
    for (size_t len = std::min(s.size() - 1, pending.size()); len > hold; --len) {
      if (pending.compare(pending.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  *ready = pending.substr(0, pending.size() - hold);
  pending.erase(0, pending.size() - hold);
  return false;
}

GenerateResult generate(Session& session, const std::vector<int32_t>& prompt,
                        const GenerateOptions& opts,
                        const std::function<void(std::string_view)>& on_text) {
  return prefill_then(session, prompt, opts,
                      [&] { return generate_from_prefilled(session, opts, on_text); });
}

GenerateResult prefill_then(Session& session, const std::vector<int32_t>& prompt,
                            const GenerateOptions& opts,
                            const std::function<GenerateResult()>& decode) {
  if (prompt.empty()) fail("the prompt is empty (no tokens)");
  if (session.n_past() + static_cast<int>(prompt.size()) > session.n_ctx()) {
    fail("prompt of {} tokens does not fit in the context of {} tokens ({} already used)",
         prompt.size(), session.n_ctx(), session.n_past());
  }
  const auto t0 = std::chrono::steady_clock::now();
  session.prefill(prompt, opts.prefill_progress);
  const double prefill_ms = ms_since(t0);
  GenerateResult r = decode();
  r.n_prompt = static_cast<int>(prompt.size());
  r.prefill_ms = prefill_ms;
  return r;
}

GenerateResult generate_from_prefilled(Session& session, const GenerateOptions& opts,
                                       const std::function<void(std::string_view)>& on_text) {
  const Tokenizer& tok = session.model().require_tokenizer();
  const int n_vocab = session.model().config().n_vocab;
  if (session.n_past() == 0) fail("nothing to continue from: the session holds no tokens");
  GenerateResult r;
  r.n_prompt = session.n_past();
  const std::vector<float>* logits = &session.last_logits();
  Generation gen(tok, opts);
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const std::string piece = gen.step(logits->data(), n_vocab, session.n_past() < session.n_ctx());
    if (!piece.empty() && on_text) on_text(piece);
    if (gen.done()) break;
    logits = &session.decode(gen.next_token());
  }
  r.tokens = gen.tokens();
  r.text = gen.text();
  r.stop_reason = gen.stop_reason();
  r.decode_ms = ms_since(t0);
  return r;
}

Generation::Generation(const Tokenizer& tok, const GenerateOptions& opts)
    : tok_(tok), opts_(opts), sampler_(opts.sampler), dec_(tok) {
  if (opts_.json_object) json_ = std::make_unique<JsonConstraint>(tok);
  if (opts_.grammar) grammar_ = std::make_unique<GrammarConstraint>(tok, opts_.grammar);
  if (opts_.logprobs > GenerateOptions::kMaxTopLogprobs) {
    fail("logprobs: at most {} alternatives per token (got {})", GenerateOptions::kMaxTopLogprobs,
         opts_.logprobs);
  }
  if (opts_.min_tokens > 0) {
    for (int32_t id = 0; id < tok_.n_vocab(); ++id) {
      if (opts_.stop_at_eog && tok_.is_eog(id)) end_ids_.push_back(id);
    }
    end_ids_.insert(end_ids_.end(), opts_.stop_token_ids.begin(), opts_.stop_token_ids.end());
    std::sort(end_ids_.begin(), end_ids_.end());
    end_ids_.erase(std::unique(end_ids_.begin(), end_ids_.end()), end_ids_.end());
  }
}

bool Generation::ends(int32_t id) const {
  if (opts_.stop_at_eog && tok_.is_eog(id)) return true;
  return std::find(opts_.stop_token_ids.begin(), opts_.stop_token_ids.end(), id) !=
         opts_.stop_token_ids.end();
}

// When every token but those is masked already (a finished JSON value or grammar leaves only
// the end), the logits stay: the constraint ends the text.
void Generation::mask_ends(float* logits, int n_vocab) const {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  int finite = 0, finite_ends = 0;
  for (int i = 0; i < n_vocab; ++i) finite += logits[i] != neg_inf;
  for (int32_t id : end_ids_) finite_ends += id < n_vocab && logits[id] != neg_inf;
  if (finite == finite_ends) return;
  for (int32_t id : end_ids_) {
    if (id < n_vocab) logits[id] = neg_inf;
  }
}

TokenLogprob token_logprob(const float* logits, int n_vocab, int32_t id, int n) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
  double sum = 0.0;
  for (int i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double lse = mx + std::log(sum);
  TokenLogprob t;
  t.id = id;
  t.logprob = static_cast<float>(logits[id] - lse);
  std::vector<std::pair<float, int32_t>> best;  // (logit, id): a bounded min-heap of n
  auto better = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  for (int i = 0; i < n_vocab && n > 0; ++i) {
    if (static_cast<int>(best.size()) < n) {
      best.emplace_back(logits[i], i);
      std::push_heap(best.begin(), best.end(), better);
    } else if (better(std::pair<float, int32_t>(logits[i], i), best.front())) {
      std::pop_heap(best.begin(), best.end(), better);
      best.back() = {logits[i], i};
      std::push_heap(best.begin(), best.end(), better);
    }
  }
  std::sort(best.begin(), best.end(), better);  // highest first, ties to the lowest id
  for (const auto& [l, i] : best) t.top.emplace_back(i, static_cast<float>(l - lse));
  return t;
}

void Generation::finish(StopReason reason, std::string* out) {
  stop_reason_ = reason;
  done_ = true;
  pending_ += dec_.flush();
  *out += pending_;
  text_ += pending_;
  pending_.clear();
}

std::string Generation::step(const float* logits, int n_vocab, bool room) {
  FASA_CHECK(!done_);
  std::string out;
  const int n_max = opts_.n_predict;
  if (n_max >= 0 && static_cast<int>(tokens_.size()) >= n_max) {  // only when n_predict == 0
    finish(StopReason::Length, &out);
    return out;
  }
  const float* l = logits;
  const bool hold_end = static_cast<int>(tokens_.size()) < opts_.min_tokens;
  if (opts_.rules.any() || json_ || grammar_ || opts_.logprobs >= 0 || hold_end) {
    work_.assign(logits, logits + n_vocab);
    opts_.rules.apply(work_.data(), n_vocab, tokens_);
    if (json_) json_->mask(work_.data(), n_vocab);
    if (grammar_) grammar_->mask(work_.data(), n_vocab);
    if (hold_end) mask_ends(work_.data(), n_vocab);
    l = work_.data();
  }
  const int32_t id = sampler_.sample(l, n_vocab);
  if (opts_.logprobs >= 0) logprobs_.push_back(token_logprob(l, n_vocab, id, opts_.logprobs));
  if (json_) json_->accept(id);
  if (grammar_) grammar_->accept(id);
  return accept(id, room);
}

std::string Generation::accept(int32_t id, bool room) {
  FASA_CHECK(!done_);
  std::string out;
  const int n_max = opts_.n_predict;
  if (n_max >= 0 && static_cast<int>(tokens_.size()) >= n_max) {
    finish(StopReason::Length, &out);
    return out;
  }
  if (ends(id)) {
    const bool eog = opts_.stop_at_eog && tok_.is_eog(id);
    finish(eog ? StopReason::Eos : StopReason::Stop, &out);
    return out;
  }
  tokens_.push_back(id);
  pending_ += dec_.push(id);
  // The stop string itself is dropped. Before min_tokens none is looked for: the text is
  // emitted as it comes.
  static const std::vector<std::string> kNoStops;
  const bool armed = static_cast<int>(tokens_.size()) >= opts_.min_tokens;
  if (scan_stop_strings(pending_, armed ? opts_.stop : kNoStops, &out)) {
    text_ += out;
    stop_reason_ = StopReason::Stop;
    done_ = true;
    return out;
  }
  text_ += out;
  if (opts_.stop_when && opts_.stop_when(text_)) {
    finish(StopReason::Done, &out);
  } else if (n_max >= 0 && static_cast<int>(tokens_.size()) >= n_max) {
    finish(StopReason::Length, &out);
  } else if (!room) {
    finish(StopReason::Context, &out);
  } else {
    next_ = id;
  }
  return out;
}

}  // namespace fasa
