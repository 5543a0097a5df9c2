// POST /tokenize and /detokenize, as llama.cpp's server has them:
//   /tokenize   {"content": "text", "add_special": false, "parse_special": false,
//                "with_pieces": false}  ->  {"tokens": [ids]}  (with_pieces: [{"id", "piece"}])
//   /detokenize {"tokens": [ids]}  ->  {"content": "text"}
// Bad bodies are ApiError(400) naming the field; unknown fields are refused here (nothing
// else sends them).
#pragma once

#include <string>
#include <string_view>

#include "fasa/tokenizer/tokenizer.h"

namespace fasa::server {

std::string tokenize_body(const Tokenizer& tok, std::string_view body);
std::string detokenize_body(const Tokenizer& tok, std::string_view body);

}  // namespace fasa::server
