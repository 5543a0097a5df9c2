#include "fasa/server/api_structured.h"

#include <fmt/format.h>

#include "fasa/server/api.h"

namespace fasa::server {

namespace {

using ojson = nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param);
}

const char* kind_of(const ojson& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  return "null";
}

std::shared_ptr<const Grammar> compiled(const ojson& schema, const std::string& param) {
  try {
    return std::make_shared<const Grammar>(compile_json_schema(schema));
  } catch (const SchemaError& e) {
    bad(param, fmt::format("'{}': {} (docs/SERVER.md, \"Structured outputs\", lists what is "
                           "supported)",
                           param, e.what()));
  }
}

}  // namespace

std::shared_ptr<const Grammar> json_schema_format(const ojson& v, const std::string& param,
                                                  std::vector<std::string>& ignored) {
  if (!v.is_object()) {
    bad(param, fmt::format("'{}' must be an object with a 'schema' (got {})", param, kind_of(v)));
  }
  for (const auto& [key, value] : v.items()) {
    const std::string p = param + "." + key;
    if (key == "name" || key == "description") {
      if (!value.is_null() && !value.is_string()) {
        bad(p, fmt::format("'{}' must be a string (got {})", p, kind_of(value)));
      }
    } else if (key == "strict") {  // true or false: the schema is enforced either way
      if (!value.is_null() && !value.is_boolean()) {
        bad(p, fmt::format("'{}' must be a boolean (got {})", p, kind_of(value)));
      }
    } else if (key != "schema") {
      ignored.push_back(p.size() > 80 ? p.substr(0, 80) + "..." : p);
    }
  }
  const std::string schema = param + ".schema";
  if (!v.contains("schema") || v["schema"].is_null()) {
    bad(schema, fmt::format("'{}' is required", schema));
  }
  if (!v["schema"].is_object()) {
    bad(schema, fmt::format("'{}' must be an object (got {})", schema, kind_of(v["schema"])));
  }
  return compiled(v["schema"], schema);
}

std::shared_ptr<const Grammar> guided_json(const ojson& v, const std::string& param) {
  if (v.is_object()) return compiled(v, param);
  if (!v.is_string()) {
    bad(param, fmt::format("'{}' must be a JSON schema, as an object or a string (got {})", param,
                           kind_of(v)));
  }
  ojson schema;
  try {
    schema = ojson::parse(v.get_ref<const std::string&>());
  } catch (const nlohmann::json::exception&) {
    bad(param, fmt::format("'{}' is not valid JSON text", param));
  }
  if (!schema.is_object()) {
    bad(param, fmt::format("'{}' must hold a JSON object (got {})", param, kind_of(schema)));
  }
  return compiled(schema, param);
}

std::shared_ptr<const Grammar> guided_choice(const ojson& v, const std::string& param) {
  if (!v.is_array() || v.empty()) {
    bad(param, fmt::format("'{}' must be a non-empty array of strings (got {})", param,
                           v.is_array() ? "an empty array" : kind_of(v)));
  }
  std::vector<std::string> choices;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string() || v[i].get_ref<const std::string&>().empty()) {
      const std::string p = fmt::format("{}[{}]", param, i);
      bad(p, fmt::format("'{}' must be a non-empty string (got {})", p,
                         v[i].is_string() ? "an empty string" : kind_of(v[i])));
    }
    choices.push_back(v[i].get<std::string>());
  }
  return std::make_shared<const Grammar>(choice_grammar(choices));
}

}  // namespace fasa::server
