// Chat formats: detection from the GGUF chat template and rendering. The renderings follow the
// models' own templates as llama.cpp's built-in formats reproduce them (no Jinja here), except
// where the model's own template differs and is what the model was trained on: Gemma
// (whitespace around the system text), ChatMLThink (Qwen3: earlier reasoning dropped), MistralV3
// (the system text goes before the last user message, not the first), Phi3 (an empty system
// message is left out) and DeepSeekR1 (system text without "\n\n", reasoning dropped from
// earlier assistant turns, the assistant turn opened with "<think>\n"). The renderings are checked
// against Jinja's output of the real templates in the tests (tests/data/tokenizer/families).
#include "fasa/tokenizer/chat.h"

#include <optional>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/unicode.h"

namespace fasa {

namespace {

constexpr const char* kDsUser = "<\xef\xbd\x9cUser\xef\xbd\x9c>";  // <｜User｜>
constexpr const char* kDsAssistant =
    "<\xef\xbd\x9c"
    "Assistant\xef\xbd\x9c>";   // <｜Assistant｜>
constexpr const char* kDsEnd =  // <｜end▁of▁sentence｜>
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81"
    "of\xe2\x96\x81"
    "sentence\xef\xbd\x9c>";
constexpr const char* kDsBegin =  // <｜begin▁of▁sentence｜>
    "<\xef\xbd\x9c"
    "begin\xe2\x96\x81"
    "of\xe2\x96\x81"
    "sentence\xef\xbd\x9c>";

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

std::string trim(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  const size_t first = s.find_first_not_of(ws);
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(ws) - first + 1);
}

// Resolves the escapes of a piece of a Jinja string literal into `out`; false when the piece is
// not plain literal text (it holds an unescaped quote or template syntax).
bool unescape_literal(const std::string& raw, std::string& out) {
  out.clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '\'' || c == '"') return false;
    if ((c == '{' || c == '%') && i + 1 < raw.size() &&
        (raw[i + 1] == '{' || raw[i + 1] == '%' || raw[i + 1] == '}')) {
      return false;
    }
    if (c != '\\' || i + 1 == raw.size()) {
      out += c;
      continue;
    }
    const char e = raw[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      default: out += e; break;  // \\ \' \"
    }
  }
  return true;
}

// The rendering under way: the format's own text goes in with <<, a message's text with content().
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

void render_chatml(Out& out, const std::vector<ChatMessage>& messages,
                   const std::string& default_system) {
  if (!messages.empty() && messages.front().role != "system" && !default_system.empty()) {
    out << "<|im_start|>system\n" + default_system + "<|im_end|>\n";
  }
  for (const ChatMessage& m : messages) {
    out << "<|im_start|>" + m.role + "\n";
    out.content(m.content) << "<|im_end|>\n";
  }
}

void render_llama2(Out& out, const std::vector<ChatMessage>& messages) {
  out << "[INST] ";
  bool inside_turn = true;
  for (const ChatMessage& m : messages) {
    if (!inside_turn) {
      out << "[INST] ";
      inside_turn = true;
    }
    if (m.role == "system") {
      out << "<<SYS>>\n";
      out.content(m.content) << "\n<</SYS>>\n\n";
    } else if (m.role == "user") {
      out.content(m.content) << " [/INST]";
    } else {
      out.content(m.content) << "</s>";
      inside_turn = false;
    }
  }
}

// Gemma 3's own template: no system turn; the first message's system text (untrimmed) and "\n\n"
// start the first user turn; every turn's text is trimmed (Python's strip); the assistant is
// "model"; BOS comes from the tokenizer, not from here. Orders the template rejects (a system
// message later on, roles not alternating) render as llama.cpp's built-in "gemma" format does:
// system text waits for the next user turn.
void render_gemma(Out& out, const std::vector<ChatMessage>& messages) {
  std::optional<std::string> system;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      system = system.value_or("") + m.content;
      continue;
    }
    const std::string role = m.role == "assistant" ? "model" : m.role;
    out << "<start_of_turn>" + role + "\n";
    if (system && role != "model") {
      out.content(*system) << "\n\n";
      system.reset();
    }
    out.content(trim_py(m.content)) << "<end_of_turn>\n";
  }
}

// Python's str.lstrip/rstrip/strip with one character.
std::string lstrip_char(const std::string& s, char c) {
  const size_t b = s.find_first_not_of(c);
  return b == std::string::npos ? std::string() : s.substr(b);
}
std::string rstrip_char(const std::string& s, char c) {
  const size_t e = s.find_last_not_of(c);
  return e == std::string::npos ? std::string() : s.substr(0, e + 1);
}

// The text after the last `sep` (all of `s` when there is none): Python's s.split(sep)[-1].
std::string after_last(const std::string& s, const std::string& sep) {
  const size_t p = s.rfind(sep);
  return p == std::string::npos ? s : s.substr(p + sep.size());
}

// Qwen3's template: a system message first becomes the system turn; assistant turns up to the
// last user message (one that is not a "<tool_response>...</tool_response>") lose their reasoning (the text up to "</think>", and the newlines after it);
// later assistant turns keep it, re-wrapped as "<think>\n...\n</think>\n\n" (the last one
// always, others when they have reasoning).
void render_chatml_think(Out& out, const std::vector<ChatMessage>& messages,
                         const std::string& default_system) {
  if (!messages.empty() && messages.front().role != "system" && !default_system.empty()) {
    out << "<|im_start|>system\n" + default_system + "<|im_end|>\n";
  }
  size_t last_query = messages.empty() ? 0 : messages.size() - 1;
  for (size_t i = messages.size(); i-- > 0;) {
    const std::string& text = messages[i].content;
    const bool tool_response = text.rfind("<tool_response>", 0) == 0 && text.size() >= 16 &&
                               text.compare(text.size() - 16, 16, "</tool_response>") == 0;
    if (messages[i].role == "user" && !tool_response) {
      last_query = i;
      break;
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role != "assistant") {
      out << "<|im_start|>" + m.role + "\n";
      out.content(m.content) << "<|im_end|>\n";
      continue;
    }
    std::string content = m.content;
    std::string reasoning;
    const size_t close = m.content.find("</think>");
    if (close != std::string::npos) {
      content = lstrip_char(after_last(m.content, "</think>"), '\n');
      reasoning =
          lstrip_char(after_last(rstrip_char(m.content.substr(0, close), '\n'), "<think>"), '\n');
    }
    out << "<|im_start|>assistant\n";
    if (i > last_query && (i + 1 == messages.size() || !reasoning.empty())) {
      out << "<think>\n";
      out.content(lstrip_char(rstrip_char(reasoning, '\n'), '\n')) << "\n</think>\n\n";
      content = lstrip_char(content, '\n');
    }
    out.content(content) << "<|im_end|>\n";
  }
}

// Mistral v0.3's template: the (first) system text goes into the last user turn, before the
// user's text; an assistant turn is " " + its text stripped + "</s>". BOS comes from the
// tokenizer. System messages the template rejects (not first) join the same system text.
void render_mistral_v3(Out& out, const std::vector<ChatMessage>& messages) {
  std::string system;
  size_t last_user = messages.size();
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role == "system") {
      system += (system.empty() ? "" : "\n\n") + messages[i].content;
    } else if (messages[i].role == "user") {
      last_user = i;
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system") continue;
    if (m.role == "assistant") {
      out << " ";
      out.content(trim_py(m.content)) << "</s>";
      continue;
    }
    out << "[INST] ";
    if (i == last_user && !system.empty()) out.content(system) << "\n\n";
    out.content(m.content) << "[/INST]";
  }
}

// Phi-3(.5)'s template: "<|role|>\n" + text + "<|end|>\n" per message; an empty system message
// is left out.
void render_phi3(Out& out, const std::vector<ChatMessage>& messages) {
  for (const ChatMessage& m : messages) {
    if (m.role == "system" && m.content.empty()) continue;
    out << "<|" + m.role + "|>\n";
    out.content(m.content) << "<|end|>\n";
  }
}

// DeepSeek-R1(-Distill)'s template: the last system message's text first (no separator), then
// "<｜User｜>" + text and "<｜Assistant｜>" + text after its last "</think>" + end of sentence.
// BOS comes from the tokenizer.
void render_deepseek_r1(Out& out, const std::vector<ChatMessage>& messages) {
  const ChatMessage* system = nullptr;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") system = &m;
  }
  if (system != nullptr) out.content(system->content);
  for (const ChatMessage& m : messages) {
    if (m.role == "user") {
      out << kDsUser;
      out.content(m.content);
    } else if (m.role == "assistant") {
      out << kDsAssistant;
      out.content(after_last(m.content, "</think>")) << kDsEnd;
    }
  }
}

}  // namespace

std::string trim_py(const std::string& s) {
  const auto is_space = [](uint32_t cp) {
    return (cp >= 0x1C && cp <= 0x1F) || unicode::is_whitespace(cp);
  };
  size_t begin = 0;
  while (begin < s.size()) {
    size_t next = begin;
    if (!is_space(unicode::next_cp(s, next))) break;
    begin = next;
  }
  size_t end = begin;
  for (size_t i = begin; i < s.size();) {
    if (!is_space(unicode::next_cp(s, i))) end = i;
  }
  return s.substr(begin, end - begin);
}

const char* chat_format_name(ChatFormat fmt) {
  switch (fmt) {
    case ChatFormat::ChatML: return "chatml";
    case ChatFormat::Llama2: return "llama2";
    case ChatFormat::Llama3: return "llama3";
    case ChatFormat::Zephyr: return "zephyr";
    case ChatFormat::Gemma: return "gemma";
    case ChatFormat::ChatMLThink: return "chatml-think";
    case ChatFormat::MistralV3: return "mistral-v3";
    case ChatFormat::Phi3: return "phi3";
    case ChatFormat::DeepSeekR1: return "deepseek-r1";
  }
  return "?";
}

ChatFormat detect_chat_format_from_template(const std::string& tmpl, const std::string& arch) {
  if (contains(tmpl, "<|im_start|>")) {
    return contains(tmpl, "</think>") ? ChatFormat::ChatMLThink : ChatFormat::ChatML;
  }
  // llama.cpp's rule for Mistral's official v3 template; its v1, v3-tekken and v7 templates
  // (" [INST]", "\"[INST]\"", "[SYSTEM_PROMPT]") are not supported and render as llama2.
  if (contains(tmpl, "[INST]") && contains(tmpl, "[AVAILABLE_TOOLS]") &&
      !contains(tmpl, "[SYSTEM_PROMPT]") && !contains(tmpl, " [INST]") &&
      !contains(tmpl, "\"[INST]\"")) {
    return ChatFormat::MistralV3;
  }
  if (contains(tmpl, "<|assistant|>") && contains(tmpl, "<|end|>")) return ChatFormat::Phi3;
  if (contains(tmpl, "<|start_header_id|>")) return ChatFormat::Llama3;
  if (contains(tmpl, "<start_of_turn>")) return ChatFormat::Gemma;
  if (contains(tmpl, "<|user|>")) return ChatFormat::Zephyr;
  if (contains(tmpl, "[INST]")) return ChatFormat::Llama2;
  if (contains(tmpl, kDsUser) && contains(tmpl, kDsAssistant) && contains(tmpl, kDsEnd)) {
    return ChatFormat::DeepSeekR1;
  }
  if (tmpl.empty() && arch.rfind("gemma", 0) == 0) return ChatFormat::Gemma;
  if (tmpl.empty()) {
    fail(
        "the model has no tokenizer.chat_template (general.architecture = '{}'); "
        "no chat format is known for it",
        arch);
  }
  fail(
      "tokenizer.chat_template is in none of the known chat formats (chatml, chatml-think, "
      "llama2, llama3, zephyr, gemma, mistral-v3, phi3, deepseek-r1); it starts: '{}'",
      tmpl.substr(0, 80));
}

ChatFormat detect_chat_format(const GgufFile& file) {
  try {
    return detect_chat_format_from_template(file.get_string_or("tokenizer.chat_template", ""),
                                            file.get_string_or("general.architecture", ""));
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(file.path(), 0) == 0) throw;  // the GGUF reader named the file already
    throw Error(fmt::format("{}: {}", file.path(), msg));
  }
}

std::string chat_default_system_from_template(const std::string& tmpl) {
  static const std::string kHead = "<|im_start|>system";
  static const std::string kEnd = "<|im_end|>";
  size_t pos = 0;
  while ((pos = tmpl.find(kHead, pos)) != std::string::npos) {
    size_t start = pos + kHead.size();
    pos = start;
    if (tmpl.compare(start, 1, "\n") == 0) {
      start += 1;
    } else if (tmpl.compare(start, 2, "\\n") == 0) {
      start += 2;
    } else {
      continue;
    }
    const size_t end = tmpl.find(kEnd, start);
    if (end == std::string::npos) break;
    std::string text;
    if (end > start && unescape_literal(tmpl.substr(start, end - start), text)) return text;
    pos = end;
  }
  return {};
}

std::string chat_default_system(const GgufFile& file) {
  return chat_default_system_from_template(file.get_string_or("tokenizer.chat_template", ""));
}

RenderedChat render_chat_parts(ChatFormat fmt, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt, const std::string& default_system) {
  Out out;
  switch (fmt) {
    case ChatFormat::ChatML:
      render_chatml(out, messages, default_system);
      if (add_generation_prompt) out << "<|im_start|>assistant\n";
      break;
    case ChatFormat::Llama2:
      render_llama2(out, messages);  // the prompt already ends with " [/INST]"
      break;
    case ChatFormat::Llama3:
      for (const ChatMessage& m : messages) {
        out << "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
        out.content(trim(m.content)) << "<|eot_id|>";
      }
      if (add_generation_prompt) out << "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case ChatFormat::Zephyr:
      for (const ChatMessage& m : messages) {
        out << "<|" + m.role + "|>\n";
        out.content(m.content) << "<|endoftext|>\n";
      }
      if (add_generation_prompt) out << "<|assistant|>\n";
      break;
    case ChatFormat::Gemma:
      render_gemma(out, messages);
      if (add_generation_prompt) out << "<start_of_turn>model\n";
      break;
    case ChatFormat::ChatMLThink:
      render_chatml_think(out, messages, default_system);
      if (add_generation_prompt) out << "<|im_start|>assistant\n";
      break;
    case ChatFormat::MistralV3:
      render_mistral_v3(out, messages);  // the prompt already ends with "[/INST]"
      break;
    case ChatFormat::Phi3:
      render_phi3(out, messages);
      if (add_generation_prompt) out << "<|assistant|>\n";
      break;
    case ChatFormat::DeepSeekR1:
      render_deepseek_r1(out, messages);
      if (add_generation_prompt) out << std::string(kDsAssistant) + "<think>\n";
      break;
  }
  return std::move(out.r);
}

std::string render_chat(ChatFormat fmt, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const std::string& default_system) {
  return render_chat_parts(fmt, messages, add_generation_prompt, default_system).text;
}

std::vector<std::string> chat_markers(ChatFormat fmt) {
  switch (fmt) {
    case ChatFormat::ChatML: return {"<|im_start|>", "<|im_end|>"};
    case ChatFormat::Llama2: return {"</s>"};
    case ChatFormat::Llama3: return {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
    case ChatFormat::Zephyr: return {"<|system|>", "<|user|>", "<|assistant|>", "<|endoftext|>"};
    case ChatFormat::Gemma: return {"<start_of_turn>", "<end_of_turn>"};
    case ChatFormat::ChatMLThink: return {"<|im_start|>", "<|im_end|>"};
    case ChatFormat::MistralV3: return {"[INST]", "[/INST]", "</s>"};
    case ChatFormat::Phi3:
      return {"<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|endoftext|>"};
    case ChatFormat::DeepSeekR1: return {kDsUser, kDsAssistant, kDsEnd, kDsBegin};
  }
  return {};
}

}  // namespace fasa
