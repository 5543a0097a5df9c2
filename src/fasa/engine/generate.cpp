#include "fasa/engine/generate.h"

#include <algorithm>
#include <chrono>

#include "fasa/core/error.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

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
  if (prompt.empty()) fail("the prompt is empty (no tokens)");
  if (session.n_past() + static_cast<int>(prompt.size()) > session.n_ctx()) {
    fail("prompt of {} tokens does not fit in the context of {} tokens ({} already used)",
         prompt.size(), session.n_ctx(), session.n_past());
  }
  const auto t0 = std::chrono::steady_clock::now();
  session.prefill(prompt, opts.prefill_progress);
  const double prefill_ms = ms_since(t0);
  GenerateResult r = generate_from_prefilled(session, opts, on_text);
  r.n_prompt = static_cast<int>(prompt.size());
  r.prefill_ms = prefill_ms;
  return r;
}

GenerateResult generate_from_prefilled(Session& session, const GenerateOptions& opts,
                                       const std::function<void(std::string_view)>& on_text) {
  const Tokenizer& tok = session.model().require_tokenizer();
  const int n_vocab = session.model().config().n_vocab;
  if (session.n_past() == 0) fail("nothing to continue from: the session holds no tokens");
  Sampler sampler(opts.sampler);
  GenerateResult r;
  r.n_prompt = session.n_past();
  const std::vector<float>* logits = &session.last_logits();

  StreamDecoder dec(tok);
  std::string pending;
  auto emit = [&](const std::string& s) {
    if (s.empty()) return;
    r.text += s;
    if (on_text) on_text(s);
  };
  const auto t0 = std::chrono::steady_clock::now();
  r.stop_reason = "length";
  for (int i = 0; opts.n_predict < 0 || i < opts.n_predict; ++i) {
    const int32_t id = sampler.sample(logits->data(), n_vocab);
    if (opts.stop_at_eog && tok.is_eog(id)) {
      r.stop_reason = "eos";
      break;
    }
    r.tokens.push_back(id);
    pending += dec.push(id);
    std::string ready;
    if (scan_stop_strings(pending, opts.stop, &ready)) {
      emit(ready);
      r.stop_reason = "stop";
      break;
    }
    emit(ready);
    if (opts.stop_when && opts.stop_when(r.text)) {
      r.stop_reason = "done";
      break;
    }
    if (opts.n_predict >= 0 && i + 1 >= opts.n_predict) break;
    if (session.n_past() >= session.n_ctx()) {
      r.stop_reason = "context";
      break;
    }
    logits = &session.decode(id);
  }
  if (r.stop_reason != "stop") {
    pending += dec.flush();
    emit(pending);
  }
  r.decode_ms = ms_since(t0);
  return r;
}

}  // namespace fasa
