// The grammar a tool-calling answer is kept in (tool_choice "required" or a named function, and
// the generic format's "auto"), built per request from the functions' parameter schemas
// (json_schema.h) in the format's call syntax (tokenizer/chat_tools.h, chat_tool_calls.h):
//   Hermes     <tool_call>\n{"name": F, "arguments": ARGS}\n</tool_call>, with parallel calls up
//              to kMaxCalls such blocks separated by "\n"
//   Llama3     {"name": F, "parameters": ARGS}
//   MistralV3  [{"name": F, "arguments": ARGS}, ...] (one element unless parallel; the prompt
//              ends with [TOOL_CALLS])
//   Generic    {"tool_call": {"name": F, "arguments": ARGS}}, or with "auto" also
//              {"response": "text"}
// where F is one of the functions (the named one only) and ARGS a value of its schema.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fasa/engine/json_schema.h"
#include "fasa/tokenizer/chat_tools.h"

namespace fasa {

struct ToolFunction {
  std::string name;
  std::shared_ptr<const Grammar> params;  // the function's parameters, compiled
};

constexpr int kMaxParallelCalls = 8;  // Hermes blocks in one constrained answer

// Null where the answer is free: tool_choice "none", no functions, or "auto" in a format with its
// own call syntax (the answer is read for calls afterwards). `fns` are tools.tools' functions.
std::shared_ptr<const Grammar> tool_call_grammar(ToolFormat tf,
                                                 const std::vector<ToolFunction>& fns,
                                                 const ChatTools& tools);

}  // namespace fasa
