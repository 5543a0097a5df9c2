// Tool calls in a model's answer, read in the format's own call syntax (chat_tools.h):
//   Hermes     text, then <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> blocks
//              (the last closing tag may be missing where the answer ended after the JSON);
//              or the whole answer that object, bare or in a ```json fence (Qwen 2.5 Coder
//              answers so)
//   HermesCoder the same, and the object also in doubled braces {{...}}, as Qwen 2.5 Coder
//              copies its template's example call
//   Llama3     the whole answer one {"name": ..., "parameters": {...}} object
//   MistralV3  the whole answer [{"name": ..., "arguments": {...}}, ...] ([TOOL_CALLS] is a
//              control token, not in the text; a visible one is skipped)
//   Generic    the whole answer {"tool_call": {"name", "arguments"}} or {"response": "text"}
//              (an unfinished response, cut by the token limit, is the text written so far)
// An answer is calls only when all of it after the first call's start is that syntax, holding
// JSON objects of offered functions with object arguments; anything else (malformed JSON, an
// unknown function, text after the calls) leaves the whole answer as text content.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fasa/tokenizer/chat_tools.h"

namespace fasa {

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // compact JSON text of an object
};

struct ParsedAnswer {
  std::optional<std::string> content;  // null: the answer is calls only
  std::vector<ParsedToolCall> calls;   // ToolChoice parallel false: at most the first
};

// The answer read for calls of `tools`' functions (tools.offered() assumed).
ParsedAnswer parse_tool_calls(ToolFormat tf, const std::string& text, const ChatTools& tools);

// Streaming: the start of an unfinished answer's content that is certain whatever follows:
// text before any call (once it holds more than whitespace), or the generic format's response
// text decoded so far. It only grows as the answer does, and parse_tool_calls' content starts
// with it whatever the end of the answer is.
std::string tool_content_so_far(ToolFormat tf, std::string_view text);

}  // namespace fasa
