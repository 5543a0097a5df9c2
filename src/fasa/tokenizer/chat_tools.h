// Tools (function calling) in chat prompts: the functions a request offers rendered into the
// prompt the way the model's own chat template does, and the history of calls and their results.
//
// Formats (ToolFormat, detected from tokenizer.chat_template):
//   Hermes     Qwen 2.5's ChatML: a "# Tools" section with the functions as JSON inside <tools>
//              in the system turn; calls as <tool_call>\n{"name", "arguments"}\n</tool_call>;
//              results as <tool_response>...</tool_response> inside a user turn.
//   HermesCoder the same as Qwen 2.5 Coder's copy of the template writes it: its example call
//              reads {{"name": ..., "arguments": ...}} (the braces doubled in its string).
//   Llama3     Llama 3.1/3.2's JSON calls: "Environment: ipython" in the system header, the
//              functions (JSON, indent 4) in the first user message; calls as
//              {"name": ..., "parameters": ...}; results in an "ipython" turn.
//   MistralV3  Mistral v0.3: [AVAILABLE_TOOLS] [...][/AVAILABLE_TOOLS] before the last user turn,
//              calls as [TOOL_CALLS] [{"name", "arguments", "id"}], results as
//              [TOOL_RESULTS] {"content": ..., "call_id": ...}[/TOOL_RESULTS].
//   Generic    every other template (none defines tool syntax: SmolLM2's ChatML, Gemma 3, ...):
//              a system-prompt section that lists the functions and asks for one JSON object,
//              {"tool_call": {"name", "arguments"}} or {"response": "..."}; calls in the history
//              are that JSON and results a user turn {"tool_response": {"name", "content"}}.
// The first three are checked against Jinja's rendering of the real templates in the tests
// (tests/data/tokenizer/tool_chat_goldens.json).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/tokenizer/chat.h"

namespace fasa {

enum class ToolFormat { Generic, Hermes, HermesCoder, Llama3, MistralV3 };

inline bool is_hermes(ToolFormat tf) {
  return tf == ToolFormat::Hermes || tf == ToolFormat::HermesCoder;
}

// The template's own tool syntax, if `fmt` (detected from the same template) has one.
ToolFormat detect_tool_format(ChatFormat fmt, const std::string& tmpl);
ToolFormat detect_tool_format(const GgufFile& file);
// "generic", "hermes", "hermes-coder", "llama3", "mistral-v3"
const char* tool_format_name(ToolFormat tf);

// A function the model may call: its name and the whole tool object as the request gave it
// ({"type": "function", "function": {"name", "description", "parameters", ...}}, keys in the
// request's order: templates render it as JSON).
struct ChatTool {
  std::string name;
  nlohmann::ordered_json spec;
};

enum class ToolChoice { None, Auto, Required, Named };

struct ChatTools {
  std::vector<ChatTool> tools;
  ToolChoice choice = ToolChoice::Auto;
  std::string named;     // ToolChoice::Named: the function
  bool parallel = true;  // several calls in one answer (where the format has them)
  // The functions are offered (rendered, and calls parsed from the answer).
  bool offered() const { return !tools.empty() && choice != ToolChoice::None; }
};

// True when `messages` hold a tool result or an assistant call: they need a tool-aware rendering
// even where no function is offered.
bool has_tool_history(const std::vector<ChatMessage>& messages);

// The chat rendered with its tools (offered ones only: ToolChoice::None leaves them out) and
// its tool history; without either it is render_chat_parts' rendering. MistralV3 with
// ToolChoice::Required or Named ends with [TOOL_CALLS], the call's opener. The functions' JSON
// and the calls' names and arguments lie in the content ranges (client text). Throws fasa::Error
// where the template refuses the chat (Llama 3: functions but no user message to put them in;
// several calls in one assistant message) or a call's arguments are not JSON.
RenderedChat render_chat_tools(ChatFormat fmt, ToolFormat tf,
                               const std::vector<ChatMessage>& messages, const ChatTools& tools,
                               bool add_generation_prompt, const std::string& default_system = "");

// The texts of the format's call and result markup that a message's content must not forge
// (added to chat_markers(fmt) when tokenizing): Hermes' <tool_call> and <tool_response> tags,
// Llama 3's <|python_tag|>, Mistral's [TOOL_CALLS] and its kin.
std::vector<std::string> tool_markers(ToolFormat tf);

}  // namespace fasa
