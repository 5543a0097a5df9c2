// The answer of a chat request that offers tools: the grammar it is generated in (tool_choice
// "required" or named, the generic format), the calls read from its text (tokenizer/
// chat_tool_calls.h) with ids, and, streamed, OpenAI's deltas: content as it becomes certain
// (text that may still be a call is held back), then per call a first chunk with its index, id,
// type and function name (arguments ""), then its arguments, and finish_reason "tool_calls".
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/engine/generate.h"
#include "fasa/model/model.h"
#include "fasa/server/api.h"

namespace fasa::server {

// How the server treats a request's answer: `tools` null when it offers no functions (the
// answer is text), else the model's tool format.
struct ToolAnswer {
  ToolFormat format = ToolFormat::Generic;
  const ChatTools* tools = nullptr;  // r.tools, which must outlive this
};

// The request's ToolAnswer on `model`; where the answer is constrained (tool_choice "required"
// or named, or the generic format), go.grammar becomes the tool-call grammar (tool_grammar.h).
// Throws ApiError(400) with lossless decoding then, which samples its own tokens.
ToolAnswer tool_answer(const Model& model, const GenRequest& r, GenerateOptions& go);

// A new call id: "call_" and 24 letters and digits; Mistral's format takes exactly 9 of them.
std::string tool_call_id(ToolFormat tf);

// Reads o.text for calls: with calls o.tool_calls holds them (ids given), o.text the content
// before them (o.null_content when none) and o.finish_reason is "tool_calls"; otherwise o.text
// becomes the content (the generic format's "response" text).
void read_tool_calls(ToolFormat tf, const ChatTools& tools, GenOutcome& o);

// A message's "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}].
nlohmann::ordered_json tool_calls_json(const std::vector<ChatToolCall>& calls);

// One choice's stream.
class ToolCallStream {
 public:
  ToolCallStream(ToolFormat tf, const ChatTools& tools) : tf_(tf), tools_(&tools) {}
  // The content that may be sent now, the answer having grown by `piece`.
  std::string push(std::string_view piece);
  // The answer is whole: the chunks still to send (held-back content, or the calls' deltas);
  // o.finish_reason becomes "tool_calls" when there are calls.
  std::string finish(GenOutcome& o);

 private:
  ToolFormat tf_;
  const ChatTools* tools_;
  std::string text_;     // the answer so far
  size_t released_ = 0;  // bytes of its content sent
};

}  // namespace fasa::server
