// Generation loop: prefill the prompt, then sample token by token, streaming text that never
// splits a UTF-8 character, until EOS, a stop string, the token limit or the context end.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fasa/engine/grammar_constraint.h"
#include "fasa/engine/json_constraint.h"
#include "fasa/engine/logit_rules.h"
#include "fasa/engine/sampler.h"
#include "fasa/engine/session.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

// Why a generation ended.
enum class StopReason {
  None,     // not yet (a Generation that is not done())
  Eos,      // an end-of-generation token was sampled (not emitted)
  Stop,     // a stop string appeared, or a stop token was sampled (neither emitted)
  Length,   // n_predict tokens were generated
  Context,  // the context is full
  Done,     // GenerateOptions::stop_when said so
};
// "none" | "eos" | "stop" | "length" | "context" | "done": what `fasa run` prints.
const char* name(StopReason r);

struct GenerateOptions {
  int n_predict = 128;  // max new tokens (< 0: until EOS or context end)
  SamplerParams sampler;
  std::vector<std::string> stop;  // stop strings (not included in the output)
  bool stop_at_eog = true;
  // Ids that end generation like an end-of-generation token (not emitted, not counted), whether
  // or not stop_at_eog.
  std::vector<int32_t> stop_token_ids;
  // While fewer tokens than this were generated, nothing ends generation but the token limit and
  // the context end: the tokens that would end it (end of generation when stop_at_eog, the stop
  // token ids) are masked out of sampling, unless nothing else is left, and stop strings are
  // looked for only in the text of the tokens from the min_tokens-th on.
  int min_tokens = 0;
  // Checked with the text emitted so far after each new piece; true ends generation
  // (StopReason::Done). May be null. E.g. a task scorer whose score can no longer change.
  std::function<bool(const std::string&)> stop_when;
  // Called after each prefill chunk with (tokens done, prompt tokens); may be null.
  std::function<void(int, int)> prefill_progress;
  LogitRules rules;          // penalties and logit_bias, applied before sampling
  bool json_object = false;  // keep the text one JSON object (json_constraint.h)
  // Keep the text one value of this grammar (a JSON schema or a list of choices: json_schema.h,
  // grammar_constraint.h); null: none.
  std::shared_ptr<const Grammar> grammar;
  // >= 0: record each generated token's log-probability and the `logprobs` most likely ids
  // (Generation::logprobs), from the logits after `rules` and the masks, before the
  // temperature and the filters (OpenAI's logprobs). At most kMaxTopLogprobs.
  int logprobs = -1;
  static constexpr int kMaxTopLogprobs = 20;
};

// One generated (or prompt) token's log-probability under the model, and the most likely ids at
// its position, highest first.
struct TokenLogprob {
  int32_t id = -1;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;  // [n] (id, logprob)
};
// log softmax(logits)[id] and the top n ids ([n_vocab] logits; -inf entries have no mass).
TokenLogprob token_logprob(const float* logits, int n_vocab, int32_t id, int n);

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids
  std::string text;             // emitted text
  StopReason stop_reason = StopReason::None;
  int n_prompt = 0;
  double prefill_ms = 0.0;
  double decode_ms = 0.0;
};

// The token-by-token part of generation, one step at a time, for callers that run the forward
// passes themselves (the server's batch loop): sampling, end of generation, stop strings, and
// text that never splits a UTF-8 character.
//   Generation g(tokenizer, opts);
//   for (;;) { emit(g.step(logits, n_vocab, room)); if (g.done()) break; append g.next_token(); }
class Generation {
 public:
  Generation(const Tokenizer& tok, const GenerateOptions& opts);
  // `logits` ([n_vocab]) follow the last token appended; `room` says whether the context can
  // take one more. Samples the next token and returns the text that became final (may be "").
  // Afterwards either done(), or next_token() must be appended before the next step.
  std::string step(const float* logits, int n_vocab, bool room);
  // step() with the token chosen by the caller (lossless decoding samples it itself): `id`
  // follows the tokens generated so far. Returns the text that became final.
  std::string accept(int32_t id, bool room);
  bool done() const { return done_; }
  int32_t next_token() const { return next_; }
  StopReason stop_reason() const { return stop_reason_; }         // once done()
  const std::vector<int32_t>& tokens() const { return tokens_; }  // generated ids
  const std::string& text() const { return text_; }               // emitted so far
  // One per generated token (also the end-of-generation token when one was sampled), when
  // GenerateOptions::logprobs >= 0.
  const std::vector<TokenLogprob>& logprobs() const { return logprobs_; }

 private:
  void finish(StopReason reason, std::string* out);  // flushes held-back text into *out
  bool ends(int32_t id) const;                       // the token ends generation when sampled
  void mask_ends(float* logits, int n_vocab) const;  // min_tokens: those tokens -inf

  const Tokenizer& tok_;
  GenerateOptions opts_;
  Sampler sampler_;
  StreamDecoder dec_;
  std::string pending_;  // decoded text held back: it may still grow into a stop string
  std::string text_;
  std::vector<int32_t> tokens_;
  StopReason stop_reason_ = StopReason::None;
  int32_t next_ = -1;
  bool done_ = false;
  std::vector<float> work_;                     // [n_vocab] the logits after rules and mask
  std::unique_ptr<JsonConstraint> json_;        // opts_.json_object
  std::unique_ptr<GrammarConstraint> grammar_;  // opts_.grammar
  std::vector<TokenLogprob> logprobs_;
  std::vector<int32_t> end_ids_;  // min_tokens > 0: every id for which ends() holds
};

// `on_text` receives each piece of text as soon as it is final (may be null).
GenerateResult generate(Session& session, const std::vector<int32_t>& prompt,
                        const GenerateOptions& opts,
                        const std::function<void(std::string_view)>& on_text);

// Checks that `prompt` is not empty and fits, prefills it (opts.prefill_progress), then returns
// decode()'s result (a generation from the prefilled session) with n_prompt and prefill_ms set.
// generate() is prefill_then with generate_from_prefilled; lossless decoding uses it too.
GenerateResult prefill_then(Session& session, const std::vector<int32_t>& prompt,
                            const GenerateOptions& opts,
                            const std::function<GenerateResult()>& decode);

// The same loop for a session whose prompt is already in its cache (e.g. copied from another
// session with Session::copy_prefix_from): sampling starts from session.last_logits().
// n_prompt reports the tokens already in the session; prefill_ms is 0.
GenerateResult generate_from_prefilled(Session& session, const GenerateOptions& opts,
                                       const std::function<void(std::string_view)>& on_text);

// Splits `pending` into text safe to emit now and a held-back tail that may still grow into a
// stop string. Returns true (and truncates at the match) when a stop string is complete.
bool scan_stop_strings(std::string& pending, const std::vector<std::string>& stop,
                       std::string* ready);

}  // namespace fasa
