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

bool flag(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
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

}  // namespace

std::string tokenize_body(const Tokenizer& tok, std::string_view body) {
  const json j = object_body(body);
  only_fields(j, {"content", "add_special", "parse_special", "with_pieces"});
  const auto c = j.find("content");
  if (c == j.end() || !c->is_string()) {
    throw ApiError(400, "'content' (a string) is required", "content");
  }
  const std::string& text = c->get_ref<const std::string&>();
  const bool add = flag(j, "add_special"), special = flag(j, "parse_special");
  std::vector<int32_t> ids;
  try {
    ids = tok.encode(text, add && tok.adds_bos(), special);
  } catch (const Error& e) {  // not UTF-8
    throw ApiError(400, e.what(), "content");
  }
  json out;
  out["tokens"] = json::array();
  for (int32_t id : ids) {
    if (flag(j, "with_pieces")) {
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
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace fasa::server
