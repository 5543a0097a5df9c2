// The OpenAI-compatible request and response bodies: strict parsing of /v1/completions and
// /v1/chat/completions requests (with fasa's per-request KV-policy extension) and rendering of
// responses, stream chunks (server-sent events) and the model list. Pure functions: no engine,
// no sockets.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fasa/attention/policy.h"
#include "fasa/engine/json_schema.h"
#include "fasa/engine/logit_rules.h"
#include "fasa/engine/lossless.h"
#include "fasa/engine/sampler.h"
#include "fasa/engine/tool_grammar.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/chat_tools.h"

namespace fasa::server {

// A request the client got wrong (or a limit it hit): answered with `status` and
// http::error_json(status, what()). `param` names the offending field ("" if none), e.g.
// "temperature", "messages[1].content", "fasa.budget".
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, std::string param = "")
      : std::runtime_error(message), status(status), param(std::move(param)) {}
  int status;
  std::string param;
};

enum class Endpoint { Completions, Chat };

// The "fasa" extension object: {"policy": "fasa", "budget": 256, "n_tip": 0.25, ...}.
struct PolicyRequest {
  std::string policy;     // a policy name or full spec "name:key=value,..."; "" = server default
  PolicyOptions options;  // every other key, its value as a string (256 -> "256", 0.1 -> "0.1",
                          // true -> "on", false -> "off", [0, 1] -> "0+1")
  bool given() const { return !policy.empty() || !options.empty(); }
};

// One prompt of /v1/completions: a text, or token ids.
struct PromptInput {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};

struct GenRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::string model;                // "" when absent
  std::string prompt;               // completions
  std::vector<int32_t> prompt_ids;  // completions: a prompt given as token ids
  bool prompt_is_ids = false;
  // Completions given several prompts ("prompt": ["a", "b"] or [[1, 2], [3]]): every one, in
  // order (the first is also in the fields above); empty for one prompt. At most kMaxPrompts,
  // and prompts x n at most kMaxPrompts too.
  std::vector<PromptInput> prompts;
  static constexpr int kMaxPrompts = 32;
  std::vector<ChatMessage> messages;  // chat ("developer" is taken as "system"; "tool" results)
  // Chat: "tools", "tool_choice", "parallel_tool_calls" (api_tools.h); tool_functions[i] is
  // tools.tools[i]'s name and compiled parameters.
  ChatTools tools;
  std::vector<ToolFunction> tool_functions;
  int max_tokens = -1;    // -1: absent (the server's default applies)
  SamplerParams sampler;  // OpenAI defaults: temp 1, top_p 1, top_k 0, min_p 0
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;  // at most 4, none empty
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage (stream only)
  PolicyRequest fasa;
  LosslessOptions lossless;    // "fasa": {"lossless": 4 | "auto"} (engine/lossless.h)
  bool parse_special = false;  // "fasa": {"parse_special": true}: special-token texts in
                               // the prompt or the messages' contents become tokens
  int n = 1;                   // choices, 1 .. kMaxChoices
  static constexpr int kMaxChoices = 8;
  LogitRules rules;  // presence/frequency/repetition penalties, logit_bias (ids checked against
                     // the vocabulary by the server)
  // The most likely alternatives to report per token, or -1 for no logprobs (completions:
  // "logprobs": N; chat: "logprobs": true with "top_logprobs": N).
  int logprobs = -1;
  bool echo = false;         // completions: the prompt comes back before the text (and its
                             // logprobs, with "logprobs")
  bool json_object = false;  // response_format {"type": "json_object"}
  // response_format {"type": "json_schema"}, guided_json or guided_choice, compiled; null when
  // none (at most one of these and json_object is set).
  std::shared_ptr<const Grammar> grammar;
  // Fields this server does not know, ignored (named in the X-Fasa-Ignored-Fields header and
  // the log): "foo", "messages[1].tool_calls", ...
  std::vector<std::string> ignored;
  // "cache_salt" (vLLM's field): requests of different salts never share prompt-cache entries
  // ("" when not given).
  std::string cache_salt;
  // vLLM's stop controls (engine/generate.h): no end before min_tokens tokens, ignore_eos goes on
  // past end-of-generation tokens, stop_token_ids end the answer (ids checked against the
  // vocabulary by the server).
  int min_tokens = 0;
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
};

// Throw ApiError(400, ...) naming the field for: a body that is not a JSON object, malformed
// JSON (with the byte offset), a wrong type, a value out of range, or a feature this server does
// not support that would change the answer (a non-empty "suffix", best_of above n, a JSON
// schema keyword outside the supported subset, guided_regex, two output constraints at once, a
// chat role other than system/developer/user/assistant/tool, a bad tool definition or
// tool_choice, the deprecated functions/function_call: api_tools.h).
// Other servers' fields (api_fields.h) are applied (vLLM's min_tokens, ignore_eos,
// stop_token_ids) or, when they would change the answer, refused unless their value changes
// nothing (llama-server's grammar, vLLM's use_beam_search, ...). Fields it does not know (as
// other servers and LangChain or LiteLLM add them: "metadata", "messages[0].refusal", ...) are
// ignored and listed in GenRequest::ignored.
// Per-request "fasa.calib" and "fasa.offload_dir" are refused (they name server-side files:
// start the server with --calib / --offload-dir); the "fasa" object stays strict.
GenRequest parse_completion_request(std::string_view body);
GenRequest parse_chat_request(std::string_view body);

// One token of a logprobs answer: its text (the token's bytes, invalid UTF-8 replaced when
// rendered), its log-probability (none for a prompt's first token, which nothing predicts) and
// the most likely alternatives at its position, highest first.
struct LogprobEntry {
  std::string token;
  std::optional<float> logprob;
  std::vector<std::pair<std::string, float>> top;  // (token text, logprob)
};

// What the engine did for one request (one choice of it: `index`).
struct GenOutcome {
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  std::string text;
  std::string finish_reason;  // "stop" | "length" | "tool_calls"
  // Chat with tools: the calls read from the answer (`text` is then the content before them,
  // null when there is none).
  std::vector<ChatToolCall> tool_calls;
  bool null_content = false;
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;           // prompt tokens the prompt cache gave
  std::string policy;              // the policy spec actually used
  std::string calibration_kind;    // a calibrated policy's: online, stored or file ("" others)
  std::string calibration_file;    // a calibrated policy's calibration: file name and sha256
  std::string calibration_sha256;  // ("" for others)
  uint64_t kv_bytes_read = 0;      // K/V (and selection side data) bytes read at decode steps
  double kv_bytes_read_per_token = 0.0;
  std::string lossless = "off";  // the request's lossless setting, and its decoder's counts
  LosslessStats lossless_stats;
  int index = 0;                       // the choice's index (n > 1, several prompts)
  int prompt_index = 0;                // its prompt's (several prompts: usage counts each once)
  double prompt_ms = 0.0;              // slot to first token: the prompt's prefill
  double predicted_ms = 0.0;           // first token to the last
  bool has_logprobs = false;           // the request asked for logprobs: render `logprobs`
  std::vector<LogprobEntry> logprobs;  // echo: the prompt's first, then the generated tokens'
};

// Non-streamed bodies. Both carry "usage" {prompt_tokens, completion_tokens, total_tokens,
// prompt_tokens_details, "fasa"}, "fasa" {policy, kv_bytes_read, kv_bytes_read_per_token, ...}
// (the same object twice: clients that keep only the usage still see it) and llama-server's
// "timings" {cache_n, prompt_n, prompt_ms, prompt_per_token_ms, prompt_per_second, predicted_n,
// predicted_ms, predicted_per_token_ms, predicted_per_second}: prompt_n the prompt tokens
// prefilled (the prompt cache's are cache_n), predicted_n the tokens generated; over several
// choices the counts summed and the times the longest (they run side by side).
std::string render_completion(const GenOutcome& o);       // "object": "text_completion"
std::string render_chat_completion(const GenOutcome& o);  // "object": "chat.completion"
// n > 1 or several prompts: one choice per outcome (their indices), usage and fasa stats summed
// over them (each prompt counted once).
std::string render_completion(const std::vector<GenOutcome>& choices);
std::string render_chat_completion(const std::vector<GenOutcome>& choices);

// Server-sent events, each "data: {json}\n\n". A chunk carries a text delta and/or a finish
// reason (null while generating). Chat: the first chunk of a stream has delta {"role":
// "assistant", "content": ""}; `first` selects it.
// o.index is the chunk's choice; with o.has_logprobs the chunk carries `logprobs` for the
// tokens sampled since the last chunk (may be none). With `timed` (the stream's last chunk when
// it has no usage chunk) it carries the "timings" of those choices.
std::string sse_completion_chunk(const GenOutcome& o, std::string_view delta,
                                 std::string_view finish_reason,
                                 const std::vector<LogprobEntry>& logprobs = {},
                                 const std::vector<GenOutcome>* timed = nullptr);
std::string sse_chat_chunk(const GenOutcome& o, std::string_view delta,
                           std::string_view finish_reason, bool first,
                           const std::vector<LogprobEntry>& logprobs = {},
                           const std::vector<GenOutcome>* timed = nullptr);
// The final usage chunk (stream_options.include_usage): "choices": [], "usage", "fasa",
// "timings" (over the choices).
std::string sse_usage_chunk(const GenOutcome& o, Endpoint endpoint);
std::string sse_usage_chunk(const std::vector<GenOutcome>& choices, Endpoint endpoint);
std::string sse_done();  // "data: [DONE]\n\n"

// GET /v1/models: {"object": "list", "data": [{"id", "object": "model", "created",
// "owned_by": "fasa"}]}; GET /v1/models/{id}: one such model object.
std::string render_models(const std::vector<std::string>& ids, int64_t created);
std::string render_model(const std::string& id, int64_t created);

// The fasa stats as response headers (values header-safe): X-Fasa-Policy, X-Fasa-Calibration
// (a calibrated policy's: "kind[; file=NAME; sha256=HEX]"); `with_counts` (a whole answer, once
// generated) adds X-Fasa-Kv-Bytes-Read, X-Fasa-Kv-Bytes-Read-Per-Token and, for lossless
// decoding, X-Fasa-Lossless "setting; acceptance=A; tokens_per_verification=T".
std::vector<std::pair<std::string, std::string>> fasa_headers(const std::vector<GenOutcome>& cs,
                                                              bool with_counts);

}  // namespace fasa::server
