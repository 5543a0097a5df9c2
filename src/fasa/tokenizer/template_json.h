// JSON text as the chat templates' `tojson` filter writes it (Hugging Face's, which is Python's
// json.dumps with ensure_ascii=False): ", " between items and ": " after keys, or with `indent`
// each item on its own line; keys in their given order; non-ASCII characters as they are.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fasa {

// indent < 0: one line.
std::string template_json(const nlohmann::ordered_json& v, int indent = -1);

}  // namespace fasa
