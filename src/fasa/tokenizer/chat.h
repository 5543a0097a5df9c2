// Chat formats for the supported families, chosen from the GGUF chat template.
#pragma once

#include <string>
#include <vector>

#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

class GgufFile;

// A function call an assistant message made (tools: chat_tools.h): `arguments` is JSON text.
struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool" (a call's result: chat_tools.h)
  std::string content;
  std::vector<ChatToolCall> tool_calls = {};  // assistant: the calls it made
  std::string tool_call_id = {};              // tool: the call it answers
};

// ChatMLThink: ChatML as Qwen3's template renders it (reasoning dropped from earlier assistant
// turns); MistralV3: Mistral v0.3's [INST] template; Phi3: <|user|>...<|end|>; DeepSeekR1:
// DeepSeek-R1(-Distill)'s <｜User｜>/<｜Assistant｜> template.
enum class ChatFormat {
  ChatML,
  Llama2,
  Llama3,
  Zephyr,
  Gemma,
  ChatMLThink,
  MistralV3,
  Phi3,
  DeepSeekR1
};

// Detects the format from tokenizer.chat_template (and the architecture); throws fasa::Error
// when the model has no template this engine knows.
ChatFormat detect_chat_format(const GgufFile& file);

// Renders messages; with `add_generation_prompt` ends with the assistant turn opener.
// For ChatML models whose template inserts a default system prompt (SmolLM2), `default_system`
// is that prompt and is used when the first message is not a system message.
std::string render_chat(ChatFormat fmt, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const std::string& default_system = "");

// The same rendering, and where the messages' contents lie in it: what the chat format adds
// (turn markers, role names, the default system prompt) is outside those ranges. Tokenize with
// Tokenizer::encode_with_literals(text, ..., content, chat_markers(fmt)) so that a message's
// text can never become a turn marker.
struct RenderedChat {
  std::string text;
  std::vector<TextRange> content;  // ascending, disjoint; empty contents have none
};
RenderedChat render_chat_parts(ChatFormat fmt, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt, const std::string& default_system = "");

// The special-token texts that delimit turns in `fmt` (ChatML: "<|im_start|>", "<|im_end|>").
std::vector<std::string> chat_markers(ChatFormat fmt);

// The default system prompt embedded in a ChatML template, if any ("" otherwise).
std::string chat_default_system(const GgufFile& file);

// The same two, from the template text (tokenizer.chat_template) and general.architecture.
// detect_chat_format_from_template throws fasa::Error when nothing matches.
ChatFormat detect_chat_format_from_template(const std::string& tmpl, const std::string& arch = "");
std::string chat_default_system_from_template(const std::string& tmpl);

// Python's str.strip(), which Jinja's `trim` filter is: Unicode White_Space plus U+001C..U+001F
// (Python's isspace counts those separators too).
std::string trim_py(const std::string& s);

// "chatml", "llama2", "llama3", "zephyr", "gemma", "chatml-think", "mistral-v3", "phi3",
// "deepseek-r1"
const char* chat_format_name(ChatFormat fmt);

}  // namespace fasa
