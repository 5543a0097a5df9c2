// /v1/completions' "prompt" (api_fields.h): one prompt or several, as OpenAI takes them (a string,
// an array of strings, token ids, an array of token-id arrays).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "fasa/server/api_fields.h"

namespace fasa::server {

namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param);
}

// Token ids: a non-empty array of integers in [0, INT32_MAX] (the server checks the vocabulary).
bool token_ids(const json& v, std::vector<int32_t>* out) {
  if (!v.is_array() || v.empty()) return false;
  out->clear();
  for (const json& x : v) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 ||
        x.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return false;
    }
    out->push_back(static_cast<int32_t>(x.get<int64_t>()));
  }
  return true;
}

// One prompt: a string or token ids; nullopt for anything else.
std::optional<PromptInput> one_prompt(const json& v) {
  PromptInput p;
  if (v.is_string()) {
    p.text = v.get<std::string>();
    return p;
  }
  if (token_ids(v, &p.ids)) {
    p.is_ids = true;
    return p;
  }
  return std::nullopt;
}

[[noreturn]] void bad_prompt(const std::string& param, const json& v) {
  const std::string got = v.is_array()    ? (v.empty() ? "an empty array" : "an array")
                          : v.is_object() ? "an object"
                                          : v.dump();  // a number or a boolean
  bad(param, fmt::format("'{}' must be a string, an array of token ids (integers >= 0), or an "
                         "array of strings or of token-id arrays (got {})",
                         param, got));
}

}  // namespace

void parse_prompts(const json& v, const std::string& param, GenRequest& req) {
  std::vector<PromptInput> all;
  if (auto p = one_prompt(v)) {
    all.push_back(std::move(*p));
  } else if (v.is_array() && !v.empty() && (v[0].is_string() || v[0].is_array())) {
    if (v.size() > static_cast<size_t>(GenRequest::kMaxPrompts)) {
      bad(param, fmt::format("'{}' holds {} prompts; at most {} per request", param, v.size(),
                             GenRequest::kMaxPrompts));
    }
    const bool strings = v[0].is_string();
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string at = fmt::format("{}[{}]", param, i);
      if (v[i].is_string() != strings) {
        bad(at, fmt::format("'{}' must be {}, as '{}[0]' is: prompts of one request are all "
                            "strings or all token-id arrays",
                            at, strings ? "a string" : "a token-id array", param));
      }
      auto p = one_prompt(v[i]);
      if (!p)
        bad(at, fmt::format("'{}' must be a non-empty array of token ids (integers >= 0)", at));
      all.push_back(std::move(*p));
    }
  } else {
    bad_prompt(param, v);
  }
  req.prompt = all[0].text;
  req.prompt_ids = all[0].ids;
  req.prompt_is_ids = all[0].is_ids;
  req.prompts.clear();
  if (all.size() > 1) req.prompts = std::move(all);
}

void check_prompts_times_n(const GenRequest& req) {
  const size_t n_prompts = std::max<size_t>(1, req.prompts.size());
  if (n_prompts * static_cast<size_t>(req.n) > static_cast<size_t>(GenRequest::kMaxPrompts)) {
    bad("n", fmt::format("{} prompts times 'n' {} is {} sequences; at most {} per request",
                         n_prompts, req.n, n_prompts * req.n, GenRequest::kMaxPrompts));
  }
}

void check_sequences_fit(const GenRequest& req, size_t n_prompts, int capacity) {
  const size_t sequences = n_prompts * static_cast<size_t>(req.n);
  if (req.max_tokens == 0 || sequences <= static_cast<size_t>(capacity)) return;
  const std::string why = n_prompts > 1 ? fmt::format("{} prompts x n {}", n_prompts, req.n)
                                        : fmt::format("n {}", req.n);
  bad(n_prompts > 1 ? "prompt" : "n",
      fmt::format("this request needs {} sequences ({}); this server takes at most {} at once "
                  "(--parallel plus --queue)",
                  sequences, why, capacity));
}

std::vector<GenRequest> one_request_per_prompt(const GenRequest& req) {
  if (req.prompts.empty()) return {req};
  std::vector<GenRequest> out;
  for (const PromptInput& p : req.prompts) {
    GenRequest r = req;
    r.prompts.clear();
    r.prompt = p.text;
    r.prompt_ids = p.ids;
    r.prompt_is_ids = p.is_ids;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace fasa::server
