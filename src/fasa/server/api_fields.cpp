// The request fields beyond OpenAI's that this server applies or refuses (api_fields.h): vLLM's
// stop controls, and a table of fields that would change the answer, each with the values that
// change nothing (accepted: clients such as llama.cpp's web page send every sampler's neutral
// value) and why any other is refused.
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "fasa/server/api_fields.h"

namespace fasa::server {

namespace {

using json = nlohmann::json;

constexpr int64_t kMaxMinTokens = 1 << 20;  // a sanity bound; the server checks max_tokens
constexpr size_t kMaxStopTokenIds = 64;
constexpr size_t kMaxShownBytes = 40;  // of a string quoted back in a message

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param);
}

// A value as quoted in messages: strings cut and in single quotes, containers only named.
std::string shown(const json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.size() > kMaxShownBytes) {
      size_t n = kMaxShownBytes;
      while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
      s = s.substr(0, n) + "...";
    }
    return fmt::format("'{}'", s);
  }
  if (v.is_array()) return v.empty() ? "[]" : "an array";
  if (v.is_object()) return v.empty() ? "{}" : "an object";
  return v.dump();
}

// --- applied: vLLM's stop controls ---

// An integer in [0, hi]: JSON's non-negative integers parse as unsigned (2.0 is not one).
bool unsigned_at_most(const json& v, uint64_t hi) {
  return v.is_number_unsigned() && v.get<uint64_t>() <= hi;
}

void set_min_tokens(const json& v, const std::string& name, GenRequest& req) {
  if (!unsigned_at_most(v, kMaxMinTokens)) {
    bad(name,
        fmt::format("'{}' must be an integer in [0, {}] (got {})", name, kMaxMinTokens, shown(v)));
  }
  req.min_tokens = static_cast<int>(v.get<uint64_t>());
}

void set_ignore_eos(const json& v, const std::string& name, GenRequest& req) {
  if (!v.is_boolean()) bad(name, fmt::format("'{}' must be a boolean (got {})", name, shown(v)));
  req.ignore_eos = v.get<bool>();
}

void set_stop_token_ids(const json& v, const std::string& name, GenRequest& req) {
  if (!v.is_array() || v.size() > kMaxStopTokenIds) {
    bad(name, fmt::format("'{}' must be an array of at most {} token ids (got {})", name,
                          kMaxStopTokenIds,
                          v.is_array() ? fmt::format("an array of {}", v.size()) : shown(v)));
  }
  req.stop_token_ids.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const json& x = v[i];
    if (!unsigned_at_most(x, std::numeric_limits<int32_t>::max())) {
      const std::string at = fmt::format("{}[{}]", name, i);
      bad(at, fmt::format("'{}' must be a token id (an integer >= 0; got {})", at, shown(x)));
    }
    req.stop_token_ids.push_back(static_cast<int32_t>(x.get<uint64_t>()));
  }
}

using Setter = void (*)(const json& v, const std::string& name, GenRequest& req);
struct Applied {
  const char* name;
  Setter set;
};
const Applied kApplied[] = {
    {"min_tokens", set_min_tokens},
    {"ignore_eos", set_ignore_eos},
    {"stop_token_ids", set_stop_token_ids},
};

// --- refused unless neutral ---

enum Where : unsigned { kCompletions = 1, kChat = 2, kBoth = 3 };

struct Refused {
  const char* name;
  unsigned where;       // the endpoints whose field it is (elsewhere: ignored)
  const char* neutral;  // JSON array of the values accepted because they change nothing
  const char* why;      // said after "'name' is not supported"
};

// clang-format off
const Refused kRefused[] = {
    // OpenAI's
    {"audio", kChat, "[]", ": this server generates text only"},
    {"modalities", kChat, R"([["text"]])", ": this server generates text only"},
    {"web_search_options", kChat, "[]", ": this server has no web search"},
    {"reasoning_effort", kChat, R"(["none"])", ": the served models do not reason"},
    {"reasoning", kChat, "[]", ": the served models do not reason"},
    {"verbosity", kChat, R"(["medium"])", ": the served models take no verbosity setting"},
    // vLLM's
    {"use_beam_search", kBoth, "[false]", ": there is no beam search"},
    {"length_penalty", kBoth, "[1]", ": there is no beam search"},
    {"include_stop_str_in_output", kBoth, "[false]", ": a stop string is never in the text"},
    {"skip_special_tokens", kBoth, "[true]", ": special tokens are never in the text"},
    {"truncate_prompt_tokens", kBoth, "[]", ": a prompt is never cut (one too long is refused)"},
    {"prompt_logprobs", kBoth, "[]", ": for the prompt's logprobs use 'echo' with 'logprobs' "
                                    "on /v1/completions"},
    {"allowed_token_ids", kBoth, "[]", ": use 'logit_bias'"},
    {"bad_words", kBoth, "[[]]", ": use 'logit_bias'"},
    {"logits_processors", kBoth, "[[]]", ": there are no custom logits processors"},
    {"return_tokens_as_token_ids", kBoth, "[false]", ": logprobs show the tokens' text"},
    {"guided_whitespace_pattern", kBoth, "[]", ": JSON whitespace is not configurable"},
    {"structural_tag", kBoth, "[]", ": use 'response_format', 'guided_json' or 'guided_choice'"},
    {"structured_outputs", kBoth, "[]", ": use 'response_format', 'guided_json' or "
                                        "'guided_choice'"},
    {"echo", kChat, "[false]", " on /v1/chat/completions: the answer does not repeat the last "
                               "message"},
    {"add_generation_prompt", kChat, "[true]", ": the prompt always ends with the assistant's "
                                               "turn"},
    {"continue_final_message", kChat, "[false]", ": the prompt always ends with a new assistant "
                                                 "turn"},
    {"add_special_tokens", kChat, "[false]", ": the chat format adds what the model needs"},
    {"add_special_tokens", kCompletions, "[true]", ": the prompt starts as the model asks (BOS)"},
    {"chat_template", kChat, "[]", ": the model's own chat format is used"},
    {"documents", kChat, "[[]]", ": the chat format takes messages only"},
    // llama-server's
    {"grammar", kBoth, R"([""])", ": GBNF grammars are not implemented; JSON output takes "
                                  "'response_format', 'guided_json' or 'guided_choice'"},
    {"json_schema", kBoth, "[]", ": use 'response_format' {\"type\": \"json_schema\"} or "
                                 "'guided_json'"},
    {"n_predict", kBoth, "[-1]", ": use 'max_tokens'"},
    {"n_probs", kBoth, "[0]", ": use 'logprobs'"},
    {"n_cmpl", kBoth, "[1]", ": use 'n'"},
    {"repeat_penalty", kBoth, "[1]", ": use 'repetition_penalty' (over the prompt and the "
                                     "answer, as vLLM's)"},
    {"typical_p", kBoth, "[1]", ": there is no typical sampling"},
    {"top_n_sigma", kBoth, "[-1]", ": there is no top-n-sigma sampling"},
    {"xtc_probability", kBoth, "[0]", ": there is no XTC sampling"},
    {"dry_multiplier", kBoth, "[0]", ": there is no DRY sampling"},
    {"mirostat", kBoth, "[0]", ": there is no mirostat sampling"},
    {"dynatemp_range", kBoth, "[0]", ": there is no dynamic temperature"},
    {"min_keep", kBoth, "[0]", ": top-p and min-p keep what they keep"},
    {"t_max_predict_ms", kBoth, "[0, -1]", ": there is no time limit; use 'max_tokens'"},
    {"n_indent", kBoth, "[0]", ": there is no indentation rule"},
    {"lora", kBoth, "[[]]", ": there are no LoRA adapters"},
};
// clang-format on

void refuse_unless_neutral(const Refused& f, const json& v) {
  const json neutral = json::parse(f.neutral);
  for (const json& n : neutral) {
    if (v == n) return;
  }
  std::string accepted;
  for (const json& n : neutral) accepted += (accepted.empty() ? "" : " or ") + n.dump();
  bad(f.name,
      fmt::format("'{}' is not supported{} (got {}){}", f.name, f.why, shown(v),
                  accepted.empty()
                      ? ""
                      : fmt::format("; only {}, which changes nothing, is accepted", accepted)));
}

}  // namespace

bool parse_extra_field(const std::string& key, const json& value, Endpoint endpoint,
                       GenRequest& req) {
  for (const Applied& f : kApplied) {
    if (key == f.name) {
      if (!value.is_null()) f.set(value, key, req);
      return true;
    }
  }
  const unsigned here = endpoint == Endpoint::Chat ? kChat : kCompletions;
  for (const Refused& f : kRefused) {
    if (key == f.name && (f.where & here) != 0) {
      if (!value.is_null()) refuse_unless_neutral(f, value);
      return true;
    }
  }
  return false;
}

}  // namespace fasa::server
