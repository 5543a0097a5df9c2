// Parsing of /v1/completions and /v1/chat/completions request bodies (api.h): a table of the
// fields each endpoint knows, one checker per field, and every mistake in a known field an
// ApiError(400) that names it. Fields it does not know are ignored but listed (GenRequest::
// ignored, sent back in a header): clients and libraries (LangChain, LiteLLM) add fields of
// other servers, and refusing them made real clients fail; a field we know but cannot honour in
// a way that changes the answer (a suffix, best_of > n, guided_regex) is still refused.
#include "fasa/server/api.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/server/api_fields.h"
#include "fasa/server/api_structured.h"
#include "fasa/server/api_tools.h"
#include "fasa/tokenizer/unicode.h"

namespace fasa::server {

namespace {

using json = nlohmann::json;

constexpr int64_t kMaxTokensCap = 1 << 20;  // a sanity bound; the server applies its own limit
constexpr size_t kMaxStops = 4;             // as OpenAI
constexpr size_t kMaxShownBytes = 40;       // of a value quoted back in a message

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param);
}

// `s` cut to kMaxShownBytes at a character boundary, so a megabyte-long value does not come
// back as a megabyte-long error.
std::string cut(const std::string& s) {
  if (s.size() <= kMaxShownBytes) return s;
  size_t n = kMaxShownBytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // continuation byte
  return s.substr(0, n) + "...";
}

// A value as quoted in messages: strings in single quotes, other scalars as JSON. Arrays and
// objects are only named: dumping one recurses, and a request may nest them very deep.
std::string shown(const json& v) {
  if (v.is_string()) return fmt::format("'{}'", cut(v.get<std::string>()));
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return cut(v.dump());
}

// Ill-formed UTF-8 replaced by U+FFFD: the JSON parser's messages quote raw body bytes, and an
// error body must itself be valid JSON text.
std::string valid_utf8(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) unicode::append_utf8(out, unicode::next_cp(s, i));
  return out;
}

// "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." ->
// "syntax error ..." (the byte offset is reported on its own).
std::string parser_reason(std::string what) {
  const size_t tag_end = what.find("] ");
  if (what.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos) {
    what.erase(0, tag_end + 2);
  }
  const size_t colon = what.find(": ");
  if (what.rfind("parse error", 0) == 0 && colon != std::string::npos) what.erase(0, colon + 2);
  return valid_utf8(what);
}

json parse_body(std::string_view body) {
  json j;
  try {
    j = json::parse(body.begin(), body.end());
  } catch (const json::parse_error& e) {
    bad("", fmt::format("the request body is not valid JSON (at byte {}): {}", e.byte,
                        parser_reason(e.what())));
  } catch (const json::exception& e) {  // e.g. a number too large for a double
    bad("", fmt::format("the request body is not valid JSON: {}", parser_reason(e.what())));
  }
  if (!j.is_object()) bad("", "the request body must be a JSON object");
  return j;
}

// --- value checkers: each returns the value or throws naming `param` ---

const std::string& string_value(const json& v, const std::string& param) {
  if (!v.is_string()) bad(param, fmt::format("'{}' must be a string (got {})", param, shown(v)));
  return v.get_ref<const std::string&>();
}

bool bool_value(const json& v, const std::string& param) {
  if (!v.is_boolean()) bad(param, fmt::format("'{}' must be a boolean (got {})", param, shown(v)));
  return v.get<bool>();
}

// An interval of numbers, each end open or closed.
struct Range {
  double lo, hi;
  bool open_lo = false, open_hi = false;
  bool contains(double x) const {
    return (open_lo ? x > lo : x >= lo) && (open_hi ? x < hi : x <= hi);
  }
};

// A number in `r`, checked as the float the sampler will hold as well: 1e-300 is above 0 but
// its float is not.
float float_in(const json& v, const std::string& param, Range r) {
  const double x = v.is_number() ? v.get<double>() : 0.0;
  if (!v.is_number() || !r.contains(x) || !r.contains(static_cast<float>(x))) {
    bad(param, fmt::format("'{}' must be a number in {}{}, {}{} (got {})", param,
                           r.open_lo ? "(" : "[", r.lo, r.hi, r.open_hi ? ")" : "]", shown(v)));
  }
  return static_cast<float>(x);
}

// An integer in [lo, hi]. 2.0 is not one: JSON encoders write whole numbers without a point.
int64_t integer_in(const json& v, const std::string& param, int64_t lo, int64_t hi) {
  // Non-negative literals parse as unsigned; those past INT64_MAX would wrap in get<int64_t>.
  const bool fits =
      v.is_number_integer() &&
      !(v.is_number_unsigned() &&
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  const int64_t x = fits ? v.get<int64_t>() : lo;
  if (!fits || x < lo || x > hi) {
    bad(param,
        fmt::format("'{}' must be an integer in [{}, {}] (got {})", param, lo, hi, shown(v)));
  }
  return x;
}

[[noreturn]] void unsupported(const std::string& param, const char* allowed) {
  bad(param, fmt::format("'{}' is not supported{}", param, allowed));
}

bool given(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}

// --- the per-field table ---

struct Parsed {
  GenRequest req;
  bool stream_options_given = false;
  bool chat_logprobs = false;  // chat "logprobs": true
  int top_logprobs = -1;       // chat "top_logprobs"
  int best_of = 1;
  const char* max_tokens_name = "max_tokens";  // the alias the request used
  std::string_view body;
  // The body again, its objects in the order they were written (a JSON schema's properties are
  // generated in that order); parsed when a field needs it.
  std::unique_ptr<nlohmann::ordered_json> ordered;
  const char* constraint = nullptr;  // the field that constrains the output, if any
};

// p.body's value of the top-level field `name`, with its objects' keys in the body's order.
const nlohmann::ordered_json& ordered_field(Parsed& p, const char* name) {
  if (!p.ordered) {
    p.ordered = std::make_unique<nlohmann::ordered_json>(
        nlohmann::ordered_json::parse(p.body.begin(), p.body.end()));
  }
  return (*p.ordered)[name];
}

// At most one field may constrain the output (response_format json_object or json_schema,
// guided_json, guided_choice).
void claim_constraint(const char* name, Parsed& p) {
  if (p.constraint != nullptr) {
    bad(name, fmt::format("'{}' and '{}' both constrain the output: give one", p.constraint, name));
  }
  p.constraint = name;
}

// Called for a present, non-null value (null means absent) with the field's name.
using Check = void (*)(const json& v, const char* name, Parsed& p);
struct Field {
  const char* name;
  Check check;
};

void set_max_tokens(const json& v, const char* name, Parsed& p) {
  const int n = static_cast<int>(integer_in(v, name, 0, kMaxTokensCap));  // 0: echo only
  if (p.req.max_tokens != -1 && p.req.max_tokens != n) {  // the other alias came first
    bad(name, fmt::format("'max_tokens' and 'max_completion_tokens' differ ({} and {}): give one",
                          p.req.max_tokens, n));
  }
  p.req.max_tokens = n;
  p.max_tokens_name = name;
}

void set_seed(const json& v, const char* name, Parsed& p) {
  if (!v.is_number_integer()) {
    bad(name, fmt::format("'{}' must be an integer (got {})", name, shown(v)));
  }
  // Negative seeds are fine: any 64 bits seed the generator.
  const uint64_t seed =
      v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
  p.req.seed = seed;
  p.req.sampler.seed = seed;
}

std::string stop_string(const json& v, const std::string& param) {
  const std::string& s = string_value(v, param);
  if (s.empty()) bad(param, fmt::format("'{}' must not be empty", param));
  return s;
}

void set_stop(const json& v, const char* name, Parsed& p) {
  p.req.stop.clear();
  if (v.is_string()) {
    p.req.stop.push_back(stop_string(v, name));
    return;
  }
  if (!v.is_array() || v.size() > kMaxStops) {
    bad(name,
        fmt::format("'{}' must be a string or an array of at most {} strings (got {})", name,
                    kMaxStops, v.is_array() ? fmt::format("an array of {}", v.size()) : shown(v)));
  }
  for (size_t i = 0; i < v.size(); ++i) {
    p.req.stop.push_back(stop_string(v[i], fmt::format("{}[{}]", name, i)));
  }
}

void set_stream_options(const json& v, const char* name, Parsed& p) {
  if (!v.is_object()) {
    bad(name, fmt::format("'{}' must be an object (got {})", name, shown(v)));
  }
  for (const auto& [key, value] : v.items()) {
    const std::string param = fmt::format("{}.{}", name, cut(key));
    if (key != "include_usage") {
      p.req.ignored.push_back(param);
      continue;
    }
    if (!value.is_null()) p.req.include_usage = bool_value(value, param);
  }
  p.stream_options_given = true;
}

// A string or token ids (as lm-eval and vLLM clients send), or an array of several of either
// (api_prompts.cpp).
void set_prompt(const json& v, const char* name, Parsed& p) { parse_prompts(v, name, p.req); }

// --- chat messages ---

std::string role_value(const json& v, const std::string& param) {
  std::string role = v.is_string() ? v.get<std::string>() : "";
  if (role == "system" || role == "user" || role == "assistant" || role == "tool") return role;
  if (role == "developer") return "system";  // OpenAI's newer name for the system role
  bad(param, fmt::format("'{}' must be one of system, developer, user, assistant, tool (got {})",
                         param, v.is_null() ? "nothing" : shown(v)));
}

// {"type": "text", "text": "..."}: the only part type a text model can take.
std::string text_part(const json& part, const std::string& where,
                      std::vector<std::string>& ignored) {
  if (!part.is_object()) {
    bad(where, fmt::format("'{}' must be an object {{\"type\": \"text\", \"text\": ...}} (got {})",
                           where, shown(part)));
  }
  const std::string type_param = where + ".type";
  const auto type = part.find("type");
  if (type == part.end() || type->is_null()) {
    bad(type_param, fmt::format("'{}' is required", type_param));
  }
  if (*type != "text") {
    bad(type_param, fmt::format("'{}' must be 'text' (got {}): only text content is supported",
                                type_param, shown(*type)));
  }
  for (const auto& [key, value] : part.items()) {
    if (key != "type" && key != "text") ignored.push_back(fmt::format("{}.{}", where, cut(key)));
  }
  const std::string text_param = where + ".text";
  if (!given(part, "text")) bad(text_param, fmt::format("'{}' is required", text_param));
  return string_value(part.at("text"), text_param);
}

// A string, or an array of text parts taken as their concatenation.
std::string content_value(const json& v, const std::string& param,
                          std::vector<std::string>& ignored) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) {
    bad(param,
        fmt::format("'{}' must be a string or an array of text parts (got {})", param, shown(v)));
  }
  std::string text;
  for (size_t j = 0; j < v.size(); ++j) {
    text += text_part(v[j], fmt::format("{}[{}]", param, j), ignored);
  }
  return text;
}

ChatMessage message_value(const json& m, const std::string& where,
                          std::vector<std::string>& ignored) {
  if (!m.is_object()) {
    bad(where,
        fmt::format("'{}' must be an object {{\"role\", \"content\"}} (got {})", where, shown(m)));
  }
  // Role first: a message of a role we do not take (e.g. "tool") is best reported as such,
  // not by the first of its other keys.
  const auto role = m.find("role");
  ChatMessage msg;
  msg.role = role_value(role == m.end() ? json() : *role, where + ".role");
  for (const auto& [key, value] : m.items()) {
    const std::string param = fmt::format("{}.{}", where, cut(key));
    if (key == "name") {
      if (!value.is_null()) string_value(value, param);  // accepted, not used by the templates
    } else if (key == "tool_calls" || key == "tool_call_id" || key == "function_call") {
      message_tool_field(key, value, param, msg, ignored);  // api_tools.h
    } else if (key != "role" && key != "content") {
      ignored.push_back(param);
    }
  }
  const std::string content_param = where + ".content";
  if (given(m, "content")) {
    msg.content = content_value(m.at("content"), content_param, ignored);
  } else if (msg.tool_calls.empty()) {  // an assistant's calls may come without content
    bad(content_param, fmt::format("'{}' is required", content_param));
  }
  check_tool_message(msg, where);
  return msg;
}

void set_messages(const json& v, const char* name, Parsed& p) {
  if (!v.is_array() || v.empty()) {
    bad(name, fmt::format("'{}' must be a non-empty array of messages (got {})", name,
                          v.is_array() ? "an empty array" : shown(v)));
  }
  p.req.messages.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    p.req.messages.push_back(message_value(v[i], fmt::format("{}[{}]", name, i), p.req.ignored));
  }
}

// --- the "fasa" extension object ---

// Per-request options that name server-side paths: a client must not make the server read or
// write files of its choosing.
struct ServerPathOption {
  const char* key;
  const char* what;
  const char* flag;
};
constexpr ServerPathOption kServerPathOptions[] = {
    {"calib", "file", "--calib"},
    {"offload_dir", "directory", "--offload-dir"},
};

// The entry for `key` when that option names a server path, else null.
const ServerPathOption* server_path_option(const std::string& key) {
  for (const auto& s : kServerPathOptions) {
    if (key == s.key) return &s;
  }
  return nullptr;
}

[[noreturn]] void refuse_server_path(const std::string& param, const std::string& what,
                                     const ServerPathOption& s) {
  bad(param, fmt::format("{} cannot be set per request: it names a {} on the server (start the "
                         "server with {})",
                         what, s.what, s.flag));
}

void check_option_name(const std::string& key, const std::string& param) {
  if (const auto* s = server_path_option(key)) {
    refuse_server_path(param, fmt::format("'{}'", param), *s);
  }
  bool ok = !key.empty() && key[0] >= 'a' && key[0] <= 'z';
  for (char c : key) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  if (!ok) {
    bad(param, fmt::format("'{}' is not a valid option name (lower-case letters, digits and '_', "
                           "starting with a letter)",
                           param));
  }
}

// A policy name or "name:key=value,..." spec, kept as given (the engine reads it), but with
// the same refusals as separate options: a spec must not smuggle in a server path.
std::string policy_spec(const json& v, const std::string& param) {
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
    bad(param, fmt::format("'{}' must be a non-empty string: a policy name or spec (got {})", param,
                           shown(v)));
  }
  const std::string& spec = v.get_ref<const std::string&>();
  std::string name;
  PolicyOptions opts;
  try {
    parse_policy_spec(spec, &name, &opts);
  } catch (const Error&) {  // its message quotes the whole spec, which may be huge
    bad(param, fmt::format("'{}' must be a policy name or spec name:key=value,... (got {})", param,
                           shown(v)));
  }
  for (const auto& [key, value] : opts) {
    if (const auto* s = server_path_option(key)) {
      refuse_server_path(param, fmt::format("'{}' option '{}'", param, key), *s);
    }
  }
  return spec;
}

[[noreturn]] void bad_option_value(const json& v, const std::string& param) {
  bad(param, fmt::format("'{}' must be a number, a boolean, a string or a non-empty array of "
                         "integers (got {})",
                         param, v.is_null() ? "null" : shown(v)));
}

// The value as it would appear in a "name:key=value,..." spec, which is how the engine takes
// options; so strings must not hold the spec's separators.
std::string option_value(const json& v, const std::string& param) {
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_number_integer()) return v.dump();                          // exact, signed or unsigned
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());  // shortest round trip
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.find_first_of(",:=") != std::string::npos) {
      bad(param, fmt::format("'{}' must not contain ',', ':' or '=' (got {})", param, shown(v)));
    }
    return s;
  }
  if (!v.is_array() || v.empty()) bad_option_value(v, param);
  std::string joined;  // [0, 1] -> "0+1", the spec's list form
  for (const json& x : v) {
    if (!x.is_number_integer()) bad_option_value(v, param);
    if (!joined.empty()) joined += '+';
    joined += x.dump();
  }
  return joined;
}

// "off", "auto", or a number of drafts 1 .. LosslessOptions::kMaxK (engine/lossless.h).
LosslessOptions lossless_value(const json& v, const std::string& param) {
  if (v.is_number_integer() || v.is_string()) {
    try {
      return parse_lossless(v.is_string() ? v.get<std::string>() : v.dump());
    } catch (const Error&) {
    }
  }
  bad(param, fmt::format("'{}' must be \"off\", \"auto\" or a number of drafts from 1 to {} "
                         "(got {})",
                         param, LosslessOptions::kMaxK, shown(v)));
}

void set_fasa(const json& v, const char* name, Parsed& p) {
  if (!v.is_object()) bad(name, fmt::format("'{}' must be an object (got {})", name, shown(v)));
  for (const auto& [key, value] : v.items()) {
    const std::string param = fmt::format("{}.{}", name, cut(key));
    if (key == "policy") {
      if (!value.is_null()) p.req.fasa.policy = policy_spec(value, param);
      continue;
    }
    if (key == "parse_special") {  // not a policy option: how the prompt is tokenized
      if (!value.is_null()) p.req.parse_special = bool_value(value, param);
      continue;
    }
    if (key == "lossless") {  // not a policy option: how decoding uses the policy
      if (!value.is_null()) p.req.lossless = lossless_value(value, param);
      continue;
    }
    check_option_name(key, param);
    p.req.fasa.options[key] = option_value(value, param);
  }
}

// --- generic checkers for simple fields ---

void set_model(const json& v, const char* name, Parsed& p) { p.req.model = string_value(v, name); }
void check_user(const json& v, const char* name, Parsed&) { string_value(v, name); }  // ignored
// vLLM's field: prompts of different salts never share prompt-cache entries.
void set_cache_salt(const json& v, const char* name, Parsed& p) {
  p.req.cache_salt = string_value(v, name);
  if (p.req.cache_salt.empty()) bad(name, "'cache_salt' must be a non-empty string");
  if (p.req.cache_salt.size() > 256) bad(name, "'cache_salt' must be at most 256 bytes");
}
void set_stream(const json& v, const char* name, Parsed& p) { p.req.stream = bool_value(v, name); }
// The ranges are SamplerParams::validate's (whose min_p excludes 1), so a request that parses
// builds a sampler; temperature's upper bound is OpenAI's.
void set_temperature(const json& v, const char* name, Parsed& p) {
  p.req.sampler.temp = float_in(v, name, {0, 2});
}
void set_top_p(const json& v, const char* name, Parsed& p) {
  p.req.sampler.top_p = float_in(v, name, {0, 1, /*open_lo=*/true});
}
void set_min_p(const json& v, const char* name, Parsed& p) {
  p.req.sampler.min_p = float_in(v, name, {0, 1, /*open_lo=*/false, /*open_hi=*/true});
}
void set_top_k(const json& v, const char* name, Parsed& p) {
  p.req.sampler.top_k = static_cast<int>(integer_in(v, name, 0, std::numeric_limits<int>::max()));
}
void set_n(const json& v, const char* name, Parsed& p) {
  p.req.n = static_cast<int>(integer_in(v, name, 1, GenRequest::kMaxChoices));
}
void set_best_of(const json& v, const char* name, Parsed& p) {
  p.best_of = static_cast<int>(integer_in(v, name, 1, GenRequest::kMaxChoices));
}
void set_presence(const json& v, const char* name, Parsed& p) {
  p.req.rules.presence_penalty = float_in(v, name, {-2, 2});
}
void set_frequency(const json& v, const char* name, Parsed& p) {
  p.req.rules.frequency_penalty = float_in(v, name, {-2, 2});
}
void set_repetition(const json& v, const char* name, Parsed& p) {
  p.req.rules.repetition_penalty = float_in(v, name, {0, 10, /*open_lo=*/true});
}
// {"<token id>": bias in [-100, 100], ...}
void set_logit_bias(const json& v, const char* name, Parsed& p) {
  if (!v.is_object()) bad(name, fmt::format("'{}' must be an object (got {})", name, shown(v)));
  p.req.rules.bias.clear();
  for (const auto& [key, value] : v.items()) {
    const std::string param = fmt::format("{}.{}", name, cut(key));
    char* end = nullptr;
    const long long id = std::strtoll(key.c_str(), &end, 10);
    if (key.empty() || end != key.c_str() + key.size() || id < 0 ||
        id > std::numeric_limits<int32_t>::max()) {
      bad(param, fmt::format("the keys of '{}' must be token ids (got '{}')", name, cut(key)));
    }
    p.req.rules.bias.emplace_back(static_cast<int32_t>(id), float_in(value, param, {-100, 100}));
  }
}
// Completions: "logprobs": N alternatives per token (OpenAI allows up to 5; we up to 20).
void set_completion_logprobs(const json& v, const char* name, Parsed& p) {
  if (v.is_boolean()) {  // some clients send true / false here too
    p.req.logprobs = v.get<bool>() ? 0 : -1;
    return;
  }
  p.req.logprobs = static_cast<int>(integer_in(v, name, 0, GenerateOptions::kMaxTopLogprobs));
}
void set_chat_logprobs(const json& v, const char* name, Parsed& p) {
  p.chat_logprobs = bool_value(v, name);
}
void set_top_logprobs(const json& v, const char* name, Parsed& p) {
  p.top_logprobs = static_cast<int>(integer_in(v, name, 0, GenerateOptions::kMaxTopLogprobs));
}
void set_echo(const json& v, const char* name, Parsed& p) { p.req.echo = bool_value(v, name); }
void check_suffix(const json& v, const char* name, Parsed&) {
  if (!(v.is_string() && v.get_ref<const std::string&>().empty())) {
    unsupported(name, " (text insertion: only null or \"\")");
  }
}
// {"type": "text"}, {"type": "json_object"} or {"type": "json_schema", "json_schema": {...}}.
void set_response_format(const json& v, const char* name, Parsed& p) {
  const std::string param = std::string(name) + ".type";
  if (!v.is_object() || !given(v, "type")) {
    bad(param, fmt::format("'{}' must be an object with a 'type' (got {})", name, shown(v)));
  }
  const json& t = v.at("type");
  if (t == "text") return;
  if (t == "json_object") {
    claim_constraint(name, p);
    p.req.json_object = true;
    return;
  }
  if (t == "json_schema") {
    claim_constraint(name, p);
    const std::string inner = std::string(name) + ".json_schema";
    if (!given(v, "json_schema")) bad(inner, fmt::format("'{}' is required", inner));
    p.req.grammar = json_schema_format(ordered_field(p, name)["json_schema"], inner, p.req.ignored);
    return;
  }
  bad(param,
      fmt::format("'{}' must be 'text', 'json_object' or 'json_schema' (got {})", param, shown(t)));
}
// vLLM's guided decoding: a JSON schema, or one of a list of texts.
void set_guided_json(const json&, const char* name, Parsed& p) {
  claim_constraint(name, p);
  p.req.grammar = guided_json(ordered_field(p, name), name);
}
void set_guided_choice(const json&, const char* name, Parsed& p) {
  claim_constraint(name, p);
  p.req.grammar = guided_choice(ordered_field(p, name), name);
}
// Function calling (api_tools.h).
void set_tools(const json&, const char* name, Parsed& p) {
  parse_tools(ordered_field(p, name), name, p.req);
}
void set_tool_choice(const json& v, const char* name, Parsed& p) {
  parse_tool_choice(v, name, p.req);
}
void set_parallel_tool_calls(const json& v, const char* name, Parsed& p) {
  p.req.tools.parallel = bool_value(v, name);
}
void check_functions(const json& v, const char* name, Parsed&) { refuse_functions(v, name); }
void refuse_guided(const json&, const char* name, Parsed&) {
  unsupported(name,
              " (constrained decoding takes response_format json_object or json_schema, "
              "guided_json or guided_choice)");
}

const Field kCommonFields[] = {
    {"model", set_model},
    {"max_tokens", set_max_tokens},
    {"temperature", set_temperature},
    {"top_p", set_top_p},
    {"top_k", set_top_k},  // extension, as llama.cpp's server
    {"min_p", set_min_p},  // extension, as llama.cpp's server
    {"seed", set_seed},
    {"stop", set_stop},
    {"stream", set_stream},
    {"stream_options", set_stream_options},
    {"n", set_n},
    {"user", check_user},
    {"cache_salt", set_cache_salt},
    {"presence_penalty", set_presence},
    {"frequency_penalty", set_frequency},
    {"repetition_penalty", set_repetition},  // extension, as vLLM's server
    {"logit_bias", set_logit_bias},
    {"response_format", set_response_format},
    {"guided_json", set_guided_json},  // vLLM's
    {"guided_choice", set_guided_choice},
    {"guided_regex", refuse_guided},
    {"guided_grammar", refuse_guided},
    {"fasa", set_fasa},
};

const Field kCompletionFields[] = {
    {"prompt", set_prompt},
    {"logprobs", set_completion_logprobs},  // completions: an integer count
    {"echo", set_echo},
    {"suffix", check_suffix},
    {"best_of", set_best_of},
};

const Field kChatFields[] = {
    {"messages", set_messages},
    {"max_completion_tokens", set_max_tokens},  // the newer name of max_tokens
    {"logprobs", set_chat_logprobs},            // chat: a boolean
    {"top_logprobs", set_top_logprobs},
    {"tools", set_tools},
    {"tool_choice", set_tool_choice},
    {"parallel_tool_calls", set_parallel_tool_calls},
    {"functions", check_functions},  // deprecated by OpenAI: refused unless empty
    {"function_call", check_functions},
};

const Field* find_field(std::span<const Field> fields, const std::string& key) {
  for (const Field& f : fields) {
    if (key == f.name) return &f;
  }
  return nullptr;
}

// OpenAI's defaults, not the CLI's (SamplerParams' own): plain sampling at temperature 1.
SamplerParams openai_sampler_defaults() {
  SamplerParams s;
  s.temp = 1.0f;
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  return s;
}

GenRequest parse_request(std::string_view body, Endpoint endpoint) {
  const json j = parse_body(body);
  const bool chat = endpoint == Endpoint::Chat;
  const std::span<const Field> own =
      chat ? std::span<const Field>(kChatFields) : std::span<const Field>(kCompletionFields);
  Parsed p;
  p.body = body;
  p.req.endpoint = endpoint;
  p.req.sampler = openai_sampler_defaults();
  for (const auto& [key, value] : j.items()) {
    const Field* f = find_field(own, key);
    if (f == nullptr) f = find_field(kCommonFields, key);
    if (f == nullptr) {  // other servers' fields (api_fields.cpp), else ignored
      if (!parse_extra_field(key, value, endpoint, p.req)) {
        p.req.ignored.push_back(cut(key));
      }
      continue;
    }
    if (!value.is_null()) f->check(value, f->name, p);
  }
  const char* required = chat ? "messages" : "prompt";
  if (!given(j, required)) bad(required, fmt::format("'{}' is required", required));
  if (p.stream_options_given && !p.req.stream) {
    bad("stream_options", "'stream_options' is only allowed when 'stream' is true");
  }
  if (p.best_of > p.req.n) {
    bad("best_of", fmt::format("'best_of' above 'n' is not supported (got best_of {} and n {}): "
                               "every generated choice is returned",
                               p.best_of, p.req.n));
  }
  if (chat) {
    check_tools(p.req, p.constraint);
    if (p.top_logprobs >= 0 && !p.chat_logprobs) {
      bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    }
    if (p.chat_logprobs) p.req.logprobs = std::max(p.top_logprobs, 0);
  }
  if (p.req.echo && p.req.stream) bad("echo", "'echo' is not supported with 'stream'");
  check_prompts_times_n(p.req);
  if (p.req.max_tokens == 0 && !p.req.echo) {
    bad(p.max_tokens_name, fmt::format("'{}' must be >= 1 (0 only with 'echo', to score the "
                                       "prompt)",
                                       p.max_tokens_name));
  }
  return std::move(p.req);
}

}  // namespace

GenRequest parse_completion_request(std::string_view body) {
  return parse_request(body, Endpoint::Completions);
}

GenRequest parse_chat_request(std::string_view body) { return parse_request(body, Endpoint::Chat); }

}  // namespace fasa::server
