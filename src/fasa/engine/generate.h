// Generation loop: prefill the prompt, then sample token by token, streaming text that never
// splits a UTF-8 character, until EOS, a stop string, the token limit or the context end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fasa/engine/sampler.h"
#include "fasa/engine/session.h"

namespace fasa {

struct GenerateOptions {
  int n_predict = 128;                 // max new tokens (< 0: until EOS or context end)
  SamplerParams sampler;
  std::vector<std::string> stop;       // stop strings (not included in the output)
  bool stop_at_eog = true;
  // Checked with the text emitted so far after each new piece; true ends generation
  // (stop_reason "done"). May be null. E.g. a task scorer whose score can no longer change.
  std::function<bool(const std::string&)> stop_when;
  // Called after each prefill chunk with (tokens done, prompt tokens); may be null.
  std::function<void(int, int)> prefill_progress;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids
  std::string text;             // emitted text
  std::string stop_reason;      // "eos" | "stop" | "length" | "context" | "done"
  int n_prompt = 0;
  double prefill_ms = 0.0;
  double decode_ms = 0.0;
};

// `on_text` receives each piece of text as soon as it is final (may be null).
GenerateResult generate(Session& session, const std::vector<int32_t>& prompt,
                        const GenerateOptions& opts,
                        const std::function<void(std::string_view)>& on_text);

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
