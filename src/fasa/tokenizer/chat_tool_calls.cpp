#include "fasa/tokenizer/chat_tool_calls.h"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "fasa/tokenizer/unicode.h"

namespace fasa {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr int kMaxDepth = 128;  // JSON nested deeper is not read as a call (nor dumped)

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool blank(std::string_view s) { return trimmed(s).empty(); }

// Objects and arrays nest at most kMaxDepth deep in `s` (brackets inside strings do not count).
bool shallow(std::string_view s) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

// `s` as JSON, or a discarded value.
ojson parse_json(std::string_view s) {
  if (!shallow(s)) return ojson::value_t::discarded;
  return ojson::parse(s.begin(), s.end(), nullptr, /*allow_exceptions=*/false);
}

bool offered(const ChatTools& tools, const std::string& name) {
  return std::any_of(tools.tools.begin(), tools.tools.end(),
                     [&](const ChatTool& t) { return t.name == name; });
}

// {"name": <an offered function>, <args_key>: {...}} (arguments given as a string of a JSON
// object are taken too); false for anything else.
bool read_call(const ojson& v, const char* args_key, const ChatTools& tools,
               std::vector<ParsedToolCall>& out) {
  if (!v.is_object() || !v.contains("name") || !v["name"].is_string()) return false;
  const std::string name = v["name"];
  if (!offered(tools, name) || !v.contains(args_key)) return false;
  ojson args = v[args_key];
  if (args.is_string()) args = parse_json(args.get<std::string>());
  if (!args.is_object()) return false;
  out.push_back({name, args.dump(-1, ' ', false, ojson::error_handler_t::replace)});
  return true;
}

// A Hermes call's JSON; `doubled` (Qwen 2.5 Coder, whose template's example call is written
// {{...}}) also takes the object in doubled braces, as that model copies the example.
ojson hermes_json(std::string_view s, bool doubled) {
  s = trimmed(s);
  ojson v = parse_json(s);
  if (v.is_discarded() && doubled && s.size() >= 4 && s.substr(0, 2) == "{{" &&
      s.substr(s.size() - 2) == "}}") {
    v = parse_json(s.substr(1, s.size() - 2));
  }
  return v;
}

bool read_hermes(std::string_view rest, bool doubled, const ChatTools& tools,
                 std::vector<ParsedToolCall>& out) {
  for (rest = trimmed(rest); !rest.empty(); rest = trimmed(rest)) {
    if (rest.substr(0, kOpen.size()) != kOpen) return false;
    rest.remove_prefix(kOpen.size());
    const size_t close = rest.find(kClose);
    const std::string_view body = rest.substr(0, close);
    if (!read_call(hermes_json(body, doubled), "arguments", tools, out)) return false;
    rest =
        close == std::string_view::npos ? std::string_view() : rest.substr(close + kClose.size());
  }
  return !out.empty();
}

// The whole answer one call object, bare or in a ```json fence: what Qwen 2.5 Coder answers
// instead of <tool_call> blocks (the object is the one its instructions spell).
bool read_bare(std::string_view s, bool doubled, const ChatTools& tools,
               std::vector<ParsedToolCall>& out) {
  s = trimmed(s);
  if (s.substr(0, 3) == "```") {
    s.remove_prefix(3);
    if (s.substr(0, 4) == "json") s.remove_prefix(4);
    if (s.size() < 3 || s.substr(s.size() - 3) != "```") return false;
    s.remove_suffix(3);
  }
  return read_call(hermes_json(s, doubled), "arguments", tools, out);
}

// `s` (from the first non-space byte) is, or may still grow into, "```json" (json optional),
// whitespace and "{": the start of a fenced call.
bool fence_start(std::string_view s) {
  constexpr std::string_view kFence = "```", kJson = "json";
  if (s.size() < kFence.size()) return kFence.substr(0, s.size()) == s;
  if (s.substr(0, 3) != kFence) return false;
  s.remove_prefix(3);
  if (s.substr(0, 4) == kJson) {
    s.remove_prefix(4);
  } else if (kJson.substr(0, s.size()) == s) {
    return true;
  }
  s = trimmed(s);
  return s.empty() || s[0] == '{';
}

bool read_mistral(std::string_view s, const ChatTools& tools, std::vector<ParsedToolCall>& out) {
  s = trimmed(s);
  if (s.substr(0, 12) == "[TOOL_CALLS]") s.remove_prefix(12);
  const ojson v = parse_json(s);
  if (!v.is_array() || v.empty()) return false;
  for (const ojson& c : v) {
    if (!read_call(c, "arguments", tools, out)) return false;
  }
  return true;
}

bool read_llama3(std::string_view s, const ChatTools& tools, std::vector<ParsedToolCall>& out) {
  const ojson v = parse_json(trimmed(s));
  return read_call(v, "parameters", tools, out) || read_call(v, "arguments", tools, out);
}

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// \uXXXX at s[i] (i + 6 <= s.size()): the code unit, or -1 when the digits are not hex.
int32_t escape_unit(std::string_view s, size_t i) {
  if (s[i] != '\\' || s[i + 1] != 'u') return -1;
  int32_t u = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    const int h = hex_value(s[k]);
    if (h < 0) return -1;
    u = u * 16 + h;
  }
  return u;
}

// The generic answer {"response": "...: the string's text so far, its escapes decoded (an escape
// not yet whole, or a malformed one, ends it); nullopt when the answer is not (yet) a response.
std::optional<std::string> response_so_far(std::string_view s) {
  constexpr std::string_view kKey = "\"response\"";
  size_t i = skip_space(s, 0);
  if (i >= s.size() || s[i] != '{') return std::nullopt;
  i = skip_space(s, i + 1);
  if (s.substr(i, kKey.size()) != kKey) return std::nullopt;
  i = skip_space(s, i + kKey.size());
  if (i >= s.size() || s[i] != ':') return std::nullopt;
  i = skip_space(s, i + 1);
  if (i >= s.size() || s[i] != '"') return std::nullopt;
  std::string out;
  for (++i; i < s.size() && s[i] != '"';) {
    if (s[i] != '\\') {
      out += s[i++];
      continue;
    }
    if (i + 1 >= s.size()) break;
    const char e = s[i + 1];
    const char* simple = "\"\"\\\\//b\bf\fn\nr\rt\t";  // pairs: escape letter, character
    const char* at = e == 'u' ? nullptr : std::strchr(simple, e);
    if (at != nullptr && (at - simple) % 2 == 0) {
      out += at[1];
      i += 2;
      continue;
    }
    if (e != 'u' || i + 6 > s.size()) break;
    int32_t cp = escape_unit(s, i);
    size_t len = 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {  // a pair: the low half must follow
      const int32_t low = i + 12 <= s.size() ? escape_unit(s, i + 6) : -1;
      cp = low >= 0xDC00 && low <= 0xDFFF ? 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00) : -1;
      len = 12;
    }
    if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) break;
    unicode::append_utf8(out, static_cast<uint32_t>(cp));
    i += len;
  }
  return out;
}

// {"tool_call": {...}}: a call; {"response": "..."}: *response is the answer's text.
bool read_generic(std::string_view s, const ChatTools& tools, std::vector<ParsedToolCall>& out,
                  std::optional<std::string>& response) {
  const ojson v = parse_json(trimmed(s));
  if (!v.is_object() || v.size() != 1) return false;
  if (v.contains("response") && v["response"].is_string()) {
    response = response_so_far(s);  // the text the stream sent, whole
    return false;
  }
  return v.contains("tool_call") && read_call(v["tool_call"], "arguments", tools, out);
}

}  // namespace

ParsedAnswer parse_tool_calls(ToolFormat tf, const std::string& text, const ChatTools& tools) {
  ParsedAnswer a;
  std::optional<std::string> response;
  std::string_view before;
  bool calls = false;
  switch (tf) {
    case ToolFormat::Hermes:
    case ToolFormat::HermesCoder: {
      const size_t at = text.find(kOpen);
      if (at == std::string::npos) {
        calls = read_bare(text, tf == ToolFormat::HermesCoder, tools, a.calls);
        break;
      }
      before = std::string_view(text).substr(0, at);
      calls = read_hermes(std::string_view(text).substr(at), tf == ToolFormat::HermesCoder, tools,
                          a.calls);
      break;
    }
    case ToolFormat::Llama3: calls = read_llama3(text, tools, a.calls); break;
    case ToolFormat::MistralV3: calls = read_mistral(text, tools, a.calls); break;
    case ToolFormat::Generic:
      calls = read_generic(text, tools, a.calls, response);
      if (!calls && !response) response = response_so_far(text);  // cut short
      break;
  }
  if (!calls) {
    a.calls.clear();
    a.content = response ? *response : text;
    return a;
  }
  if (!tools.parallel) a.calls.resize(1);
  if (!blank(before)) a.content = std::string(before);
  return a;
}

namespace {

// Bytes at the start of `text` that are content whatever follows (formats other than generic).
size_t content_ready(ToolFormat tf, std::string_view text) {
  const size_t first = std::find_if_not(text.begin(), text.end(), is_space) - text.begin();
  switch (tf) {
    case ToolFormat::Generic: return 0;
    case ToolFormat::Llama3:
    case ToolFormat::MistralV3: {
      if (first == text.size()) return 0;  // nothing but whitespace yet
      return text[first] == (tf == ToolFormat::Llama3 ? '{' : '[') ? 0 : text.size();
    }
    case ToolFormat::Hermes:
    case ToolFormat::HermesCoder: {
      if (first == text.size()) return 0;
      const std::string_view rest = text.substr(first);
      if (rest[0] == '{' || fence_start(rest)) return 0;  // may be one bare call: all held
      size_t ready = text.find(kOpen);
      if (ready == std::string_view::npos) {  // hold back what may grow into "<tool_call>"
        ready = text.size();
        for (size_t n = std::min(text.size(), kOpen.size() - 1); n > 0; --n) {
          if (text.substr(text.size() - n) == kOpen.substr(0, n)) {
            ready = text.size() - n;
            break;
          }
        }
      }
      return first < ready ? ready : 0;
    }
  }
  return 0;
}

}  // namespace

std::string tool_content_so_far(ToolFormat tf, std::string_view text) {
  if (tf == ToolFormat::Generic) return response_so_far(text).value_or("");
  return std::string(text.substr(0, content_ready(tf, text)));
}

}  // namespace fasa
