#include "fasa/server/api_tools.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

namespace fasa::server {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr size_t kMaxTools = 128;  // as OpenAI
constexpr size_t kMaxNameBytes = 64;
constexpr size_t kMaxShownBytes = 40;
// Objects and arrays nested in a tool or a call's arguments (templates write them out
// recursively); a schema's own nesting limit is 128 levels, each up to two JSON levels deep.
constexpr int kMaxJsonDepth = 300;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param);
}

std::string cut(const std::string& s) {
  if (s.size() <= kMaxShownBytes) return s;
  size_t n = kMaxShownBytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n) + "...";
}

template <typename J>
std::string shown(const J& v) {
  if (v.is_string()) return fmt::format("'{}'", cut(v.template get<std::string>()));
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  if (v.is_null()) return "null";
  return cut(v.dump());
}

template <typename J>
bool given(const J& obj, const char* key) {
  return obj.contains(key) && !obj[key].is_null();
}

template <typename J>
const std::string& string_at(const J& obj, const char* key, const std::string& where) {
  const std::string param = where + "." + key;
  if (!given(obj, key)) bad(param, fmt::format("'{}' is required", param));
  if (!obj[key].is_string()) {
    bad(param, fmt::format("'{}' must be a string (got {})", param, shown(obj[key])));
  }
  return obj[key].template get_ref<const std::string&>();
}

// Nesting depth of objects and arrays, without recursion.
template <typename J>
int depth(const J& root) {
  std::vector<std::pair<const J*, int>> todo = {{&root, 0}};
  int deepest = 0;
  while (!todo.empty()) {
    const auto [v, d] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    deepest = std::max(deepest, d + 1);
    if (deepest > kMaxJsonDepth) return deepest;
    for (const J& x : *v) todo.emplace_back(&x, d + 1);
  }
  return deepest;
}

template <typename J>
void check_depth(const J& v, const std::string& param) {
  if (depth(v) > kMaxJsonDepth) {
    bad(param,
        fmt::format("'{}' nests objects and arrays deeper than {} levels", param, kMaxJsonDepth));
  }
}

bool valid_name(const std::string& s) {
  return !s.empty() && s.size() <= kMaxNameBytes && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

void ignore_unknown(const ojson& obj, std::initializer_list<const char*> known,
                    const std::string& where, std::vector<std::string>& ignored) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& key = it.key();
    const bool is_known =
        std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; });
    if (!is_known) ignored.push_back(fmt::format("{}.{}", where, cut(key)));
  }
}

std::shared_ptr<const Grammar> parameters(const ojson& fn, const std::string& where) {
  const std::string param = where + ".parameters";
  const ojson schema = given(fn, "parameters")
                           ? fn["parameters"]
                           : ojson{{"type", "object"}, {"properties", ojson::object()}};
  if (!schema.is_object()) {
    bad(param, fmt::format("'{}' must be a JSON schema object (got {})", param, shown(schema)));
  }
  if (schema.contains("type") && schema["type"] != "object") {
    bad(param, fmt::format("'{}' must describe an object: a function's arguments are one "
                           "(got type {})",
                           param, cut(schema["type"].dump())));
  }
  try {
    return std::make_shared<const Grammar>(compile_json_schema(schema));
  } catch (const SchemaError& e) {
    bad(param, fmt::format("'{}': {} (docs/SERVER.md, \"Structured outputs\", lists what is "
                           "supported)",
                           param, e.what()));
  }
}

void add_tool(const ojson& t, const std::string& where, GenRequest& r) {
  if (!t.is_object()) {
    bad(where, fmt::format("'{}' must be an object {{\"type\": \"function\", \"function\": "
                           "{{...}}}} (got {})",
                           where, shown(t)));
  }
  const std::string& type = string_at(t, "type", where);
  if (type != "function") {
    bad(where + ".type", fmt::format("'{}.type' must be 'function' (got '{}'): only function "
                                     "tools are supported",
                                     where, cut(type)));
  }
  const std::string fw = where + ".function";
  if (!given(t, "function")) bad(fw, fmt::format("'{}' is required", fw));
  const ojson& fn = t["function"];
  if (!fn.is_object()) bad(fw, fmt::format("'{}' must be an object (got {})", fw, shown(fn)));
  const std::string& name = string_at(fn, "name", fw);
  if (!valid_name(name)) {
    bad(fw + ".name", fmt::format("'{}.name' must be 1 to 64 of a-z, A-Z, 0-9, '_' and '-' (got "
                                  "'{}')",
                                  fw, cut(name)));
  }
  for (const ChatTool& other : r.tools.tools) {
    if (other.name == name) {
      bad(fw + ".name", fmt::format("'{}.name': function '{}' is defined twice", fw, name));
    }
  }
  if (given(fn, "description")) string_at(fn, "description", fw);
  if (given(fn, "strict") && !fn["strict"].is_boolean()) {
    bad(fw + ".strict",
        fmt::format("'{}.strict' must be a boolean (got {})", fw, shown(fn["strict"])));
  }
  check_depth(t, where);
  ignore_unknown(t, {"type", "function"}, where, r.ignored);
  ignore_unknown(fn, {"name", "description", "parameters", "strict"}, fw, r.ignored);
  r.tool_functions.push_back({name, parameters(fn, fw)});
  r.tools.tools.push_back({name, t});
}

}  // namespace

void parse_tools(const ojson& v, const std::string& param, GenRequest& r) {
  if (!v.is_array() || v.size() > kMaxTools) {
    bad(param, fmt::format("'{}' must be an array of at most {} tools (got {})", param, kMaxTools,
                           v.is_array() ? fmt::format("{} tools", v.size()) : shown(v)));
  }
  r.tools.tools.clear();
  r.tool_functions.clear();
  for (size_t i = 0; i < v.size(); ++i) add_tool(v[i], fmt::format("{}[{}]", param, i), r);
}

void parse_tool_choice(const json& v, const std::string& param, GenRequest& r) {
  if (v == "none" || v == "auto" || v == "required") {
    const std::string& s = v.get_ref<const std::string&>();
    r.tools.choice = s == "none"   ? ToolChoice::None
                     : s == "auto" ? ToolChoice::Auto
                                   : ToolChoice::Required;
    return;
  }
  if (v.is_object() && v.contains("type") && v["type"] == "function") {
    const std::string fw = param + ".function";
    if (!given(v, "function") || !v["function"].is_object()) {
      bad(fw, fmt::format("'{}' must be an object {{\"name\": ...}}", fw));
    }
    r.tools.choice = ToolChoice::Named;
    r.tools.named = string_at(v["function"], "name", fw);
    return;
  }
  bad(param,
      fmt::format("'{}' must be 'none', 'auto', 'required' or {{\"type\": \"function\", "
                  "\"function\": {{\"name\": ...}}}} (got {})",
                  param,
                  v.is_object() && v.contains("type") ? "type " + shown(v["type"]) : shown(v)));
}

void refuse_functions(const json& v, const std::string& param) {
  const bool empty = (v.is_array() && v.empty()) || v == "none" || v == "auto";
  if (empty) return;
  bad(param, fmt::format("'{}' (OpenAI's deprecated function calling) is not supported: send "
                         "'tools' and 'tool_choice'",
                         param));
}

void check_tools(const GenRequest& r, const char* constraint) {
  const ChatTools& t = r.tools;
  if (t.choice == ToolChoice::Named) {
    const bool defined = std::any_of(t.tools.begin(), t.tools.end(),
                                     [&](const ChatTool& x) { return x.name == t.named; });
    if (!defined) {
      bad("tool_choice", fmt::format("'tool_choice' names function '{}', which 'tools' does not "
                                     "define",
                                     cut(t.named)));
    }
  }
  if (t.choice == ToolChoice::Required && t.tools.empty()) {
    bad("tool_choice", "'tool_choice' 'required' needs 'tools'");
  }
  if (t.offered() && constraint != nullptr) {
    bad(constraint, fmt::format("'tools' and '{}' both constrain the answer: give one (or "
                                "'tool_choice': 'none')",
                                constraint));
  }
}

namespace {

ChatToolCall call_value(const json& c, const std::string& where,
                        std::vector<std::string>& ignored) {
  if (!c.is_object()) {
    bad(where, fmt::format("'{}' must be an object {{\"id\", \"type\": \"function\", "
                           "\"function\"}} (got {})",
                           where, shown(c)));
  }
  ChatToolCall call;
  call.id = string_at(c, "id", where);
  if (given(c, "type") && c["type"] != "function") {
    bad(where + ".type",
        fmt::format("'{}.type' must be 'function' (got {})", where, shown(c["type"])));
  }
  const std::string fw = where + ".function";
  if (!given(c, "function") || !c["function"].is_object()) {
    bad(fw, fmt::format("'{}' must be an object {{\"name\", \"arguments\"}}", fw));
  }
  const json& fn = c["function"];
  call.name = string_at(fn, "name", fw);
  const std::string ap = fw + ".arguments";
  if (!given(fn, "arguments")) bad(ap, fmt::format("'{}' is required", ap));
  const json& args = fn["arguments"];
  ojson parsed;
  if (args.is_string()) {  // OpenAI's: JSON text
    parsed = ojson::parse(args.get_ref<const std::string&>(), nullptr, false);
    if (parsed.is_discarded()) bad(ap, fmt::format("'{}' is not valid JSON text", ap));
    call.arguments = args.get<std::string>();
  } else if (args.is_object()) {  // some clients send the object itself
    check_depth(args, ap);
    call.arguments = args.dump();
  } else {
    bad(ap, fmt::format("'{}' must be a string of JSON (got {})", ap, shown(args)));
  }
  check_depth(parsed, ap);
  for (const auto& [key, value] : c.items()) {
    if (key != "id" && key != "type" && key != "function") {
      ignored.push_back(fmt::format("{}.{}", where, cut(key)));
    }
  }
  return call;
}

}  // namespace

void message_tool_field(const std::string& key, const json& v, const std::string& param,
                        ChatMessage& msg, std::vector<std::string>& ignored) {
  if (v.is_null()) return;
  if (key == "tool_call_id") {
    if (!v.is_string()) bad(param, fmt::format("'{}' must be a string (got {})", param, shown(v)));
    msg.tool_call_id = v.get<std::string>();
  } else if (key == "tool_calls") {
    if (!v.is_array()) {
      bad(param, fmt::format("'{}' must be an array of tool calls (got {})", param, shown(v)));
    }
    for (size_t i = 0; i < v.size(); ++i) {
      msg.tool_calls.push_back(call_value(v[i], fmt::format("{}[{}]", param, i), ignored));
    }
  } else {  // function_call
    refuse_functions(v, param);
  }
}

void check_tool_message(const ChatMessage& msg, const std::string& where) {
  if (msg.role == "tool" && msg.tool_call_id.empty()) {
    bad(where + ".tool_call_id",
        fmt::format("'{}.tool_call_id' is required in a tool message: the id of the call it "
                    "answers",
                    where));
  }
  if (msg.role != "assistant" && !msg.tool_calls.empty()) {
    bad(where + ".tool_calls",
        fmt::format("'{}.tool_calls' is only for assistant messages (got role '{}')", where,
                    msg.role));
  }
}

}  // namespace fasa::server
