#include "fasa/tokenizer/chat_tools.h"

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/chat_tools_render.h"

namespace fasa {

namespace {

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

ToolFormat detect_tool_format(ChatFormat fmt, const std::string& tmpl) {
  if (fmt == ChatFormat::ChatML && contains(tmpl, "<tool_call>")) {
    return contains(tmpl, "{{\\\"name\\\": <function-name>") ? ToolFormat::HermesCoder
                                                             : ToolFormat::Hermes;
  }
  if (fmt == ChatFormat::Llama3 && contains(tmpl, "ipython") && contains(tmpl, "\"parameters\"")) {
    return ToolFormat::Llama3;
  }
  if (fmt == ChatFormat::MistralV3 && contains(tmpl, "[TOOL_CALLS]")) return ToolFormat::MistralV3;
  return ToolFormat::Generic;
}

ToolFormat detect_tool_format(const GgufFile& file) {
  return detect_tool_format(detect_chat_format(file),
                            file.get_string_or("tokenizer.chat_template", ""));
}

const char* tool_format_name(ToolFormat tf) {
  switch (tf) {
    case ToolFormat::Generic: return "generic";
    case ToolFormat::Hermes: return "hermes";
    case ToolFormat::HermesCoder: return "hermes-coder";
    case ToolFormat::Llama3: return "llama3";
    case ToolFormat::MistralV3: return "mistral-v3";
  }
  return "?";
}

bool has_tool_history(const std::vector<ChatMessage>& messages) {
  for (const ChatMessage& m : messages) {
    if (m.role == "tool" || !m.tool_calls.empty()) return true;
  }
  return false;
}

std::vector<std::string> tool_markers(ToolFormat tf) {
  switch (tf) {
    case ToolFormat::Generic: return {};
    case ToolFormat::Hermes:
    case ToolFormat::HermesCoder:
      return {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"};
    case ToolFormat::Llama3: return {"<|python_tag|>", "<|eom_id|>"};
    case ToolFormat::MistralV3:
      return {"[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
              "[/TOOL_RESULTS]"};
  }
  return {};
}

RenderedChat render_chat_tools(ChatFormat fmt, ToolFormat tf,
                               const std::vector<ChatMessage>& messages, const ChatTools& tools,
                               bool add_generation_prompt, const std::string& default_system) {
  if (!tools.offered() && !has_tool_history(messages)) {
    return render_chat_parts(fmt, messages, add_generation_prompt, default_system);
  }
  tool_render::Out out;
  switch (tf) {
    case ToolFormat::Hermes:
    case ToolFormat::HermesCoder:
      tool_render::hermes(out, messages, tools, default_system, tf == ToolFormat::HermesCoder);
      if (add_generation_prompt) out << "<|im_start|>assistant\n";
      break;
    case ToolFormat::Llama3:
      tool_render::llama3(out, messages, tools, add_generation_prompt);
      break;
    case ToolFormat::MistralV3: {
      tool_render::mistral(out, messages, tools);
      const bool must_call =
          tools.choice == ToolChoice::Required || tools.choice == ToolChoice::Named;
      if (add_generation_prompt && tools.offered() && must_call) out << "[TOOL_CALLS]";
      break;
    }
    case ToolFormat::Generic:
      return render_chat_parts(fmt, tool_render::generic_messages(messages, tools, default_system),
                               add_generation_prompt, default_system);
  }
  return std::move(out.r);
}

namespace tool_render {

nlohmann::ordered_json call_arguments(const ChatToolCall& call) {
  try {
    return nlohmann::ordered_json::parse(call.arguments);
  } catch (const nlohmann::json::exception&) {
    fail("the arguments of tool call '{}' are not JSON text", call.id);
  }
}

}  // namespace tool_render

}  // namespace fasa
