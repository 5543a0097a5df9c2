// Structured outputs in request bodies: response_format {"type": "json_schema"} (OpenAI's) and
// vLLM's guided_json and guided_choice, each compiled once per request into a Grammar
// (engine/json_schema.h) that generation keeps its text in. Every mistake is an ApiError(400)
// naming the field; a schema keyword outside the supported subset is named with its JSON
// pointer inside the schema.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/engine/json_schema.h"

namespace fasa::server {

// response_format's "json_schema" object ({"name", "schema", "strict", "description"}); `param`
// names it ("response_format.json_schema"). Keys it does not know are appended to `ignored`.
std::shared_ptr<const Grammar> json_schema_format(const nlohmann::ordered_json& v,
                                                  const std::string& param,
                                                  std::vector<std::string>& ignored);

// guided_json: a schema, as an object or as a string of JSON text.
std::shared_ptr<const Grammar> guided_json(const nlohmann::ordered_json& v,
                                           const std::string& param);

// guided_choice: a non-empty array of non-empty strings; the answer is exactly one of them.
std::shared_ptr<const Grammar> guided_choice(const nlohmann::ordered_json& v,
                                             const std::string& param);

}  // namespace fasa::server
