// The generic tool rendering, for templates without tool syntax: the model is asked for one JSON
// object (the server constrains its answer to that object's grammar: engine/tool_grammar.h), and
// the history speaks the same JSON, so earlier turns show the model the protocol.
#include "fasa/tokenizer/chat_tools_render.h"
#include "fasa/tokenizer/template_json.h"

namespace fasa::tool_render {

namespace {

using ojson = nlohmann::ordered_json;

constexpr const char* kListHead =
    "You can call functions (tools). They are listed below, one per line, as JSON: each one's "
    "name, description and parameters (a JSON schema of its arguments).\n";

std::string ask(const ChatTools& tools) {
  const std::string call =
      "{\"tool_call\": {\"name\": \"" +
      (tools.choice == ToolChoice::Named ? tools.named : std::string("<function name>")) +
      "\", \"arguments\": {<its arguments>}}}";
  switch (tools.choice) {
    case ToolChoice::Named:
      return "Answer with one JSON object only, a call to the function " + tools.named + ": " +
             call + ".";
    case ToolChoice::Required:
      return "Answer with one JSON object only, a call to one of the functions: " + call + ".";
    default:
      return "Answer with one JSON object only. To call a function: " + call +
             ". To answer directly: {\"response\": \"<your answer>\"}.";
  }
}

std::string section(const ChatTools& tools) {
  std::string s = kListHead;
  for (const ChatTool& t : tools.tools) {
    s += template_json(t.spec.contains("function") ? t.spec["function"] : t.spec) + "\n";
  }
  return s + "\n" + ask(tools);
}

ojson call_json(const ChatToolCall& c) {
  ojson j;
  j["name"] = c.name;
  j["arguments"] = call_arguments(c);
  return j;
}

std::string calls_text(const std::vector<ChatToolCall>& calls) {
  ojson j;
  if (calls.size() == 1) {
    j["tool_call"] = call_json(calls[0]);
  } else {
    j["tool_calls"] = ojson::array();
    for (const ChatToolCall& c : calls) j["tool_calls"].push_back(call_json(c));
  }
  return template_json(j);
}

// The name of the function whose call `id` is, from the assistant messages before `upto`.
std::string called_name(const std::vector<ChatMessage>& ms, size_t upto, const std::string& id) {
  for (size_t i = upto; i-- > 0;) {
    for (const ChatToolCall& c : ms[i].tool_calls) {
      if (c.id == id) return c.name;
    }
  }
  return {};
}

}  // namespace

std::vector<ChatMessage> generic_messages(const std::vector<ChatMessage>& ms,
                                          const ChatTools& tools,
                                          const std::string& default_system) {
  std::vector<ChatMessage> out;
  if (tools.offered()) {
    const bool first_system = !ms.empty() && ms[0].role == "system";
    const std::string base = first_system ? ms[0].content : default_system;
    out.push_back({"system", (base.empty() ? "" : base + "\n\n") + section(tools)});
  }
  for (size_t i = out.empty() || ms.empty() || ms[0].role != "system" ? 0 : 1; i < ms.size(); ++i) {
    const ChatMessage& m = ms[i];
    if (m.role == "tool") {
      ojson r;
      const std::string name = called_name(ms, i, m.tool_call_id);
      if (!name.empty()) r["name"] = name;
      r["content"] = m.content;
      out.push_back({"user", template_json(ojson{{"tool_response", r}})});
    } else if (m.role == "assistant" && !m.tool_calls.empty()) {
      out.push_back({"assistant", calls_text(m.tool_calls)});
    } else if (m.role == "assistant" && tools.offered()) {
      out.push_back({"assistant", template_json(ojson{{"response", m.content}})});
    } else {
      out.push_back({m.role, m.content});
    }
  }
  return out;
}

}  // namespace fasa::tool_render
