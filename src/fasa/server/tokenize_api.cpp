#include "fasa/server/tokenize_api.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/server/api.h"

namespace fasa::server {

namespace {

using json = nlohmann::json;

json object_body(std::string_view body) {
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object");
  return j;
}

bool flag(const json& j, const char* key, bool absent = false) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absent;
  if (!it->is_boolean()) {
    throw ApiError(400, fmt::format("'{}' must be a boolean", key), key);
  }
  return it->get<bool>();
}

void only_fields(const json& j, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) throw ApiError(400, fmt::format("unknown field '{}'", key.substr(0, 40)), key);
  }
}

// What to tokenize and how, from llama.cpp's fields or vLLM's.
struct TokenizeAsk {
  std::string text;
  bool add_special = false;
  bool parse_special = false;
  bool with_pieces = false;
  const char* field = "content";  // the text's field, for errors
};

TokenizeAsk tokenize_ask(const json& j) {
  TokenizeAsk a;
  const bool vllm = j.contains("prompt");
  if (vllm && j.contains("content")) {
    throw ApiError(400, "give 'content' (llama.cpp's form) or 'prompt' (vLLM's), not both",
                   "prompt");
  }
  if (vllm) {
    only_fields(j, {"prompt", "add_special_tokens", "model"});
  } else {
    only_fields(j, {"content", "add_special", "parse_special", "with_pieces"});
  }
  a.field = vllm ? "prompt" : "content";
  const auto c = j.find(a.field);
  if (c == j.end() || !c->is_string()) {
    throw ApiError(400, fmt::format("'{}' (a string) is required", a.field), a.field);
  }
  a.text = c->get<std::string>();
  if (vllm) {  // a Hugging Face tokenizer's defaults: BOS added, special texts parsed
    a.add_special = flag(j, "add_special_tokens", true);
    a.parse_special = true;
  } else {
    a.add_special = flag(j, "add_special");
    a.parse_special = flag(j, "parse_special");
    a.with_pieces = flag(j, "with_pieces");
  }
  return a;
}

}  // namespace

std::string tokenize_body(const Tokenizer& tok, std::string_view body) {
  const TokenizeAsk a = tokenize_ask(object_body(body));
  std::vector<int32_t> ids;
  try {
    ids = tok.encode(a.text, a.add_special && tok.adds_bos(), a.parse_special);
  } catch (const Error& e) {  // not UTF-8
    throw ApiError(400, e.what(), a.field);
  }
  json out;
  out["tokens"] = json::array();
  for (int32_t id : ids) {
    if (a.with_pieces) {
      out["tokens"].push_back({{"id", id}, {"piece", tok.token_to_bytes(id, true)}});
    } else {
      out["tokens"].push_back(id);
    }
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string detokenize_body(const Tokenizer& tok, std::string_view body) {
  const json j = object_body(body);
  only_fields(j, {"tokens"});
  const auto t = j.find("tokens");
  if (t == j.end() || !t->is_array()) {
    throw ApiError(400, "'tokens' (an array of token ids) is required", "tokens");
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < t->size(); ++i) {
    const json& x = (*t)[i];
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= tok.n_vocab()) {
      throw ApiError(400,
                     fmt::format("'tokens[{}]' must be a token id in [0, {})", i, tok.n_vocab()),
                     fmt::format("tokens[{}]", i));
    }
    ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
  }
  json out;
  out["content"] = tok.decode(ids);
  out["prompt"] = out["content"];  // vLLM's name
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string tokenizer_info_body(const Tokenizer& tok, int n_ctx, const std::string& chat_template) {
  auto text = [&tok](int32_t id) { return id < 0 ? json(nullptr) : json(tok.token_text(id)); };
  json out;
  out["eos_token"] = text(tok.eos_id());
  out["bos_token"] = text(tok.bos_id());
  out["pad_token"] = nullptr;
  out["add_bos_token"] = tok.adds_bos();
  out["model_max_length"] = n_ctx;
  out["chat_template"] = chat_template.empty() ? json(nullptr) : json(chat_template);
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace fasa::server
