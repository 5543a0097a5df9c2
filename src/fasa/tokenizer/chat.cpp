// Chat formats: detection from the GGUF chat template and rendering. The renderings follow the
// models' own templates as llama.cpp's built-in formats reproduce them (no Jinja here), except
// Gemma, which follows Gemma 3's template where the two differ (whitespace around the system
// text); the ChatML and Gemma renderings are checked against Jinja's output of SmolLM2's and
// Gemma 3's templates in the tests.
#include "fasa/tokenizer/chat.h"

#include <optional>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/unicode.h"

namespace fasa {

namespace {

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
    if ((c == '{' || c == '%') && i + 1 < raw.size() && (raw[i + 1] == '{' || raw[i + 1] == '%' ||
                                                         raw[i + 1] == '}')) {
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

// Python's str.strip(), which Jinja's `trim` filter is: Unicode White_Space plus U+001C..U+001F
// (Python's isspace counts those separators too).
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

}  // namespace

const char* chat_format_name(ChatFormat fmt) {
  switch (fmt) {
    case ChatFormat::ChatML: return "chatml";
    case ChatFormat::Llama2: return "llama2";
    case ChatFormat::Llama3: return "llama3";
    case ChatFormat::Zephyr: return "zephyr";
    case ChatFormat::Gemma: return "gemma";
  }
  return "?";
}

ChatFormat detect_chat_format_from_template(const std::string& tmpl, const std::string& arch) {
  if (contains(tmpl, "<|im_start|>")) return ChatFormat::ChatML;
  if (contains(tmpl, "<|start_header_id|>")) return ChatFormat::Llama3;
  if (contains(tmpl, "<start_of_turn>")) return ChatFormat::Gemma;
  if (contains(tmpl, "<|user|>")) return ChatFormat::Zephyr;
  if (contains(tmpl, "[INST]")) return ChatFormat::Llama2;
  if (tmpl.empty() && arch.rfind("gemma", 0) == 0) return ChatFormat::Gemma;
  if (tmpl.empty()) {
    fail("the model has no tokenizer.chat_template (general.architecture = '{}'); "
         "no chat format is known for it", arch);
  }
  fail("tokenizer.chat_template is in none of the known chat formats (chatml, llama2, llama3, "
       "zephyr, gemma); it starts: '{}'", tmpl.substr(0, 80));
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
    case ChatFormat::Zephyr:
      return {"<|system|>", "<|user|>", "<|assistant|>", "<|endoftext|>"};
    case ChatFormat::Gemma: return {"<start_of_turn>", "<end_of_turn>"};
  }
  return {};
}

}  // namespace fasa
