// A plain JSON Schema validator for the keywords structured outputs support (json_schema.h), as
// the specification defines them (oneOf: exactly one alternative), to check generated values
// against: written apart from the grammar so the two cannot share a mistake.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fasa::test {

// "" when `value` satisfies `schema`, else where and why it does not ("#/items/2: not an
// integer"). Local $refs resolve against `schema`.
std::string schema_violation(const nlohmann::ordered_json& value,
                             const nlohmann::ordered_json& schema);

// schema_violation of `text` parsed as JSON ("not JSON: ..." when it does not parse).
std::string text_violation(const std::string& text, const nlohmann::ordered_json& schema);

}  // namespace fasa::test
