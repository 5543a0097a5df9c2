// The three templates that define tool syntax, rendered as Jinja renders them (the tests compare
// with Jinja's output of the real templates). Where a template raises an error this rendering
// is lenient unless the chat cannot be rendered at all: Mistral's 9-character call ids and
// alternating roles are not checked.
#include "fasa/core/error.h"
#include "fasa/tokenizer/chat_tools_render.h"
#include "fasa/tokenizer/template_json.h"

namespace fasa::tool_render {

namespace {

using ojson = nlohmann::ordered_json;

constexpr const char* kHermesHead =
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr const char* kHermesAsk =
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n";
constexpr const char* kHermesExample =
    "\"name\": <function-name>, \"arguments\": <args-json-object>";
constexpr const char* kHermesEnd = "\n</tool_call><|im_end|>\n";

constexpr const char* kLlamaDate =
    "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
constexpr const char* kLlamaIntro =
    "Given the following functions, please respond with a JSON for a function call with its "
    "proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": "
    "function name, \"parameters\": dictionary of argument name and its value}.Do not use "
    "variables.\n\n";

void llama_header(Out& out, const std::string& role) {
  out << "<|start_header_id|>" + role + "<|end_header_id|>\n\n";
}

// Mistral's [AVAILABLE_TOOLS] entry: the function's keys in order ("return" left out), string
// values quoted as they are (the template does not escape them), others as JSON.
std::string mistral_tool(const ojson& spec) {
  std::string s = "{\"type\": \"function\", \"function\": {";
  const ojson& fn = spec.contains("function") ? spec["function"] : ojson::object();
  bool first = true;
  for (auto it = fn.begin(); it != fn.end(); ++it) {
    if (it.key() == "return") continue;
    s += first ? "" : ", ";
    first = false;
    s += '"';
    s += it.key();
    s += "\": ";
    if (it->is_string()) {
      s += '"';
      s += it->get_ref<const std::string&>();
      s += '"';
    } else {
      s += template_json(*it);
    }
  }
  return s + "}}";
}

}  // namespace

void hermes(Out& out, const std::vector<ChatMessage>& ms, const ChatTools& tools,
            const std::string& default_system, bool coder) {
  const bool first_system = !ms.empty() && ms[0].role == "system";
  if (tools.offered()) {
    out << "<|im_start|>system\n";
    if (first_system) {
      out.content(ms[0].content);
    } else {
      out << default_system;
    }
    out << kHermesHead;
    for (const ChatTool& t : tools.tools) {
      out << "\n";
      out.content(template_json(t.spec));
    }
    out << kHermesAsk << (coder ? "{{" : "{") << kHermesExample << (coder ? "}}" : "}")
        << kHermesEnd;
  } else if (first_system) {
    out << "<|im_start|>system\n";
    out.content(ms[0].content) << "<|im_end|>\n";
  } else if (!default_system.empty()) {
    out << "<|im_start|>system\n" + default_system + "<|im_end|>\n";
  }
  for (size_t i = first_system ? 1 : 0; i < ms.size(); ++i) {
    const ChatMessage& m = ms[i];
    if (m.role == "tool") {
      if (i == 0 || ms[i - 1].role != "tool") out << "<|im_start|>user";
      out << "\n<tool_response>\n";
      out.content(m.content) << "\n</tool_response>";
      if (i + 1 == ms.size() || ms[i + 1].role != "tool") out << "<|im_end|>\n";
    } else if (m.role == "assistant" && !m.tool_calls.empty()) {
      out << "<|im_start|>assistant";
      if (!m.content.empty()) out << "\n", out.content(m.content);
      for (const ChatToolCall& c : m.tool_calls) {
        out << "\n<tool_call>\n{\"name\": \"";
        out.content(c.name) << "\", \"arguments\": ";
        out.content(template_json(call_arguments(c))) << "}\n</tool_call>";
      }
      out << "<|im_end|>\n";
    } else {
      out << "<|im_start|>" + m.role + "\n";
      out.content(m.content) << "<|im_end|>\n";
    }
  }
}

void llama3(Out& out, const std::vector<ChatMessage>& ms, const ChatTools& tools, bool gen) {
  size_t i = 0;
  llama_header(out, "system");
  if (tools.offered()) out << "Environment: ipython\n";
  out << kLlamaDate;
  if (!ms.empty() && ms[0].role == "system") out.content(trim_py(ms[i++].content));
  out << "<|eot_id|>";
  if (tools.offered()) {  // the functions go into the first message after the system's
    if (i == ms.size()) {
      fail(
          "this model's chat template puts the tools in the first user message, and there is "
          "none");
    }
    llama_header(out, "user");
    out << kLlamaIntro;
    for (const ChatTool& t : tools.tools) out.content(template_json(t.spec, 4)) << "\n\n";
    out.content(trim_py(ms[i++].content)) << "<|eot_id|>";
  }
  for (; i < ms.size(); ++i) {
    const ChatMessage& m = ms[i];
    if (m.role == "tool" || m.role == "ipython") {
      llama_header(out, "ipython");  // a string result is iterable: the template writes JSON
      out.content(template_json(ojson(m.content))) << "<|eot_id|>";
    } else if (!m.tool_calls.empty()) {
      if (m.tool_calls.size() != 1) {
        fail(
            "this model's chat template takes one tool call per assistant message (message "
            "{} has {})",
            i, m.tool_calls.size());
      }
      const ChatToolCall& c = m.tool_calls[0];
      llama_header(out, "assistant");
      out << "{\"name\": \"";
      out.content(c.name) << "\", \"parameters\": ";
      out.content(template_json(call_arguments(c))) << "}<|eot_id|>";
    } else {
      llama_header(out, m.role);
      out.content(trim_py(m.content)) << "<|eot_id|>";
    }
  }
  if (gen) llama_header(out, "assistant");
}

void mistral(Out& out, const std::vector<ChatMessage>& ms, const ChatTools& tools) {
  std::string system;  // the system texts, joined (the template takes one, first)
  bool has_system = false;
  size_t last_user = ms.size();
  for (size_t i = 0; i < ms.size(); ++i) {
    if (ms[i].role == "system") {
      system += (has_system ? "\n\n" : "") + ms[i].content;
      has_system = true;
    } else if (ms[i].role == "user") {
      last_user = i;
    }
  }
  for (size_t i = 0; i < ms.size(); ++i) {
    const ChatMessage& m = ms[i];
    if (m.role == "user") {
      if (tools.offered() && i == last_user) {
        out << "[AVAILABLE_TOOLS] [";
        for (size_t t = 0; t < tools.tools.size(); ++t) {
          out.content(mistral_tool(tools.tools[t].spec))
              << (t + 1 < tools.tools.size() ? ", " : "]");
        }
        out << "[/AVAILABLE_TOOLS]";
      }
      out << "[INST] ";
      if (i == last_user && has_system) out.content(system) << "\n\n";
      out.content(m.content) << "[/INST]";
    } else if (m.role == "assistant" && !m.tool_calls.empty()) {
      out << "[TOOL_CALLS] [";
      for (size_t k = 0; k < m.tool_calls.size(); ++k) {
        const ChatToolCall& c = m.tool_calls[k];
        ojson fn;
        fn["name"] = c.name;
        fn["arguments"] = call_arguments(c);
        std::string head = template_json(fn);
        head.pop_back();  // the closing brace: the id goes in the same object
        out.content(head) << ", \"id\": \"";
        out.content(c.id) << (k + 1 < m.tool_calls.size() ? "\"}, " : "\"}]</s>");
      }
    } else if (m.role == "assistant") {
      out << " ";
      out.content(trim_py(m.content)) << "</s>";
    } else if (m.role == "tool") {
      out << "[TOOL_RESULTS] {\"content\": ";
      out.content(m.content) << ", \"call_id\": \"";
      out.content(m.tool_call_id) << "\"}[/TOOL_RESULTS]";
    }
  }
}

}  // namespace fasa::tool_render
