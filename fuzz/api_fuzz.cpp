// Fuzz target: the OpenAI request-body parser (server/api_parse.cpp) and what the server does
// next with a body that parses (server.cpp): validate the sampler, render the chat messages in
// every chat format (with the request's tools in every tool format), choose the KV policy from
// the "fasa" object (policy_choice.cpp). The tools' grammar in every format has a finite value
// at its root and takes the body as a text without fault, and the body read as a model's answer
// gives calls of offered functions with JSON object arguments, or content.
// Input: byte 0 picks the endpoint (even: /v1/completions, odd: /v1/chat/completions) and the
// server's default policy, the rest is the body. Contract: the parser returns or throws
// ApiError 400 whose message error_json turns into a JSON body; a parsed request satisfies
// api.h (max_tokens, at most 4 non-empty stops, known roles, stop controls and several prompts
// in their bounds, split into one request each) and builds a sampler; choose_policy returns or
// throws ApiError 400. A structured-output grammar (json_schema, guided_json, guided_choice) has
// a finite value at its root and takes the body's bytes as a text without fault. Every response
// the server writes for the body (the answer's headers, X-Fasa-Ignored-Fields with the unknown
// field names among them, and every error) is one well-formed HTTP response with exactly the
// header lines it was given.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/engine/grammar_prefix.h"
#include "fasa/engine/tool_grammar.h"
#include "fasa/server/api.h"
#include "fasa/server/api_fields.h"
#include "fasa/server/http.h"
#include "fasa/server/http_response.h"
#include "fasa/server/policy_choice.h"
#include "fasa/server/text_escape.h"
#include "fasa/tokenizer/chat_tool_calls.h"
#include "fuzz_util.h"

namespace fasa::fuzz {
namespace {

using server::ApiError;

// A small llama-like model: 2 layers, 4 query heads over 2 kv heads of 16 dims.
PolicyContext tiny_context() {
  PolicyContext ctx;
  ctx.arch = "llama";
  ctx.shape.n_layers = 2;
  ctx.shape.n_heads = 4;
  ctx.shape.n_kv_heads = 2;
  ctx.shape.head_dim = 16;
  ctx.rope_dim = 16;
  ctx.model_sha256 = [] { return std::string(64, '0'); };
  return ctx;
}

// Header lines of a response (after its status line, before the empty line).
size_t header_lines(std::string_view bytes) {
  const std::string_view head = bytes.substr(0, bytes.find("\r\n\r\n"));
  size_t n = 0;
  for (size_t at = head.find("\r\n"); at != std::string_view::npos; at = head.find("\r\n", at + 2))
    ++n;
  return n;
}

void check_error(const ApiError& e) {
  FASA_FUZZ_EXPECT(e.status == 400);
  const std::string body = http::error_json(e.status, e.what(), "invalid_request_error");
  FASA_FUZZ_EXPECT(nlohmann::json::accept(body));
  const std::string response = http::detail::error_response(e.status, e.what(), true);
  FASA_FUZZ_EXPECT(http::detail::response_problem(response).empty());
}

// The answer's headers as server.cpp builds them, whole and streamed: never refused, one
// response with exactly those lines.
void check_answer_headers(const server::GenRequest& r) {
  http::Headers headers;
  if (!r.ignored.empty()) {
    headers.emplace_back("X-Fasa-Ignored-Fields", server::ignored_fields_header(r.ignored));
  }
  const std::string whole =
      http::detail::whole_response(200, "application/json", "{}", headers, true);
  FASA_FUZZ_EXPECT(http::detail::response_problem(whole).empty());
  FASA_FUZZ_EXPECT(header_lines(whole) == headers.size() + 3);
  headers.emplace_back("Cache-Control", "no-cache");
  const std::string stream = http::detail::response_head(200, "text/event-stream", headers, true) +
                             "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
  FASA_FUZZ_EXPECT(http::detail::response_problem(stream).empty());
  FASA_FUZZ_EXPECT(header_lines(stream) == headers.size() + 3);
}

// The compiled grammar walks any text: here the body itself, up to the first refused byte.
void check_grammar(const Grammar& g, std::string_view text) {
  FASA_FUZZ_EXPECT(g.finite.size() == g.nodes.size() && g.finite[g.root]);
  GrammarPrefix p(g);
  for (char c : text) {
    if (!p.feed(static_cast<unsigned char>(c))) break;
    p.complete();
  }
}

// The request's tools in every tool format: rendered (or refused), their grammar, and the body
// read as an answer.
void check_tools(const server::GenRequest& r, std::string_view body) {
  FASA_FUZZ_EXPECT(r.tool_functions.size() == r.tools.tools.size());
  for (const ToolFormat tf : {ToolFormat::Generic, ToolFormat::Hermes, ToolFormat::HermesCoder,
                              ToolFormat::Llama3, ToolFormat::MistralV3}) {
    for (const ChatFormat fmt :
         {ChatFormat::ChatML, ChatFormat::Llama3, ChatFormat::MistralV3, ChatFormat::Gemma}) {
      try {
        render_chat_tools(fmt, tf, r.messages, r.tools, true, "You are a helpful assistant.");
      } catch (const Error&) {  // the server answers 400
      }
    }
    if (const auto g = tool_call_grammar(tf, r.tool_functions, r.tools)) check_grammar(*g, body);
    if (!r.tools.offered()) continue;
    const ParsedAnswer a = parse_tool_calls(tf, std::string(body), r.tools);
    FASA_FUZZ_EXPECT(a.content.has_value() || !a.calls.empty());
    for (const ParsedToolCall& c : a.calls) {
      FASA_FUZZ_EXPECT(nlohmann::json::parse(c.arguments, nullptr, false).is_object());
    }
    const std::string sofar = tool_content_so_far(tf, body);
    FASA_FUZZ_EXPECT(a.content.value_or("").compare(0, sofar.size(), sofar) == 0);
  }
}

void check_request(const server::GenRequest& r, std::string_view body) {
  if (r.grammar) check_grammar(*r.grammar, body);
  FASA_FUZZ_EXPECT(r.max_tokens == -1 || (r.max_tokens >= 1 && r.max_tokens <= (1 << 20)));
  FASA_FUZZ_EXPECT(r.stop.size() <= 4);
  for (const std::string& s : r.stop) FASA_FUZZ_EXPECT(!s.empty());
  r.sampler.validate();  // a request that parses builds a sampler (api_parse.cpp)
  FASA_FUZZ_EXPECT(r.min_tokens >= 0 && r.min_tokens <= (1 << 20));
  FASA_FUZZ_EXPECT(r.stop_token_ids.size() <= 64);
  for (int32_t id : r.stop_token_ids) FASA_FUZZ_EXPECT(id >= 0);
  // Several prompts (api_fields.h): 2 .. kMaxPrompts, times n at most kMaxPrompts, each split
  // into a request of its own.
  const size_t n_prompts = r.prompts.size();
  FASA_FUZZ_EXPECT(n_prompts != 1 && n_prompts <= server::GenRequest::kMaxPrompts);
  FASA_FUZZ_EXPECT(std::max<size_t>(n_prompts, 1) * r.n <= server::GenRequest::kMaxPrompts);
  const std::vector<server::GenRequest> each = server::one_request_per_prompt(r);
  FASA_FUZZ_EXPECT(each.size() == std::max<size_t>(n_prompts, 1));
  for (const server::GenRequest& e : each) FASA_FUZZ_EXPECT(e.prompts.empty());
  if (r.endpoint != server::Endpoint::Chat) return;
  FASA_FUZZ_EXPECT(!r.messages.empty());
  for (const ChatMessage& m : r.messages) {
    FASA_FUZZ_EXPECT(m.role == "system" || m.role == "user" || m.role == "assistant" ||
                     m.role == "tool");
  }
  check_tools(r, body);
  for (const ChatFormat fmt : {ChatFormat::ChatML, ChatFormat::Llama2, ChatFormat::Llama3,
                               ChatFormat::Zephyr, ChatFormat::Gemma}) {
    try {
      render_chat(fmt, r.messages, true, "You are a helpful assistant.");
    } catch (const Error&) {  // the server answers 400
    }
  }
}

void run(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const bool chat = data[0] & 1;
  const std::string_view body = as_text(data + 1, size - 1);
  server::GenRequest r;
  try {
    r = chat ? server::parse_chat_request(body) : server::parse_completion_request(body);
  } catch (const ApiError& e) {
    check_error(e);
    return;
  }
  check_request(r, body);
  check_answer_headers(r);
  static const PolicyContext ctx = tiny_context();
  server::PolicyDefaults defaults;
  defaults.spec = (data[0] & 2) ? "streaming:budget=64" : "full";
  try {
    const std::string spec = server::choose_policy(defaults, r.fasa, ctx);
    FASA_FUZZ_EXPECT(!spec.empty());
  } catch (const ApiError& e) {
    check_error(e);
  }
}

}  // namespace
}  // namespace fasa::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fasa::fuzz::run(data, size);
  return 0;
}
