// The tool renderings of chat_tools.h, one per format, behind render_chat_tools.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/chat_tools.h"

namespace fasa::tool_render {

// The rendering under way: the format's own text goes in with <<, client text with content().
struct Out {
  RenderedChat r;
  Out& operator<<(const std::string& s) {
    r.text += s;
    return *this;
  }
  Out& content(const std::string& s) {
    if (!s.empty()) r.content.push_back({r.text.size(), r.text.size() + s.size()});
    r.text += s;
    return *this;
  }
};

// A call's arguments as the templates take them: the JSON text parsed, keys in their order.
// Throws fasa::Error when they are not JSON.
nlohmann::ordered_json call_arguments(const ChatToolCall& call);

// Qwen 2.5's template (add_generation_prompt: "<|im_start|>assistant\n" follows); `coder`: its
// Coder copy, whose example call has doubled braces.
void hermes(Out& out, const std::vector<ChatMessage>& messages, const ChatTools& tools,
            const std::string& default_system, bool coder);
// Llama 3.1/3.2's template, with the generation prompt when `gen`.
void llama3(Out& out, const std::vector<ChatMessage>& messages, const ChatTools& tools, bool gen);
// Mistral v0.3's template (its prompt ends with "[/INST]" already).
void mistral(Out& out, const std::vector<ChatMessage>& messages, const ChatTools& tools);
// The generic rendering's messages: the tools section in the system message, calls and results
// as JSON text; render_chat_parts renders them in the model's own format.
std::vector<ChatMessage> generic_messages(const std::vector<ChatMessage>& messages,
                                          const ChatTools& tools,
                                          const std::string& default_system);

}  // namespace fasa::tool_render
