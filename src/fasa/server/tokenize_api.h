// POST /tokenize and /detokenize, as llama.cpp's server has them:
//   /tokenize   {"content": "text", "add_special": false, "parse_special": false,
//                "with_pieces": false}  ->  {"tokens": [ids]}  (with_pieces: [{"id", "piece"}])
//   /detokenize {"tokens": [ids]}  ->  {"content": "text", "prompt": "text"}
// and in vLLM's form, which lm-eval's remote tokenizer sends (tokenizer_backend=remote):
//   /tokenize   {"prompt": "text", "add_special_tokens": true, "model": "..."}  ->  {"tokens"}
//               (special-token texts are parsed, as a Hugging Face tokenizer does; BOS is
//               added when add_special_tokens and the model asks for one)
//   /detokenize answers "prompt" too (the same text as "content")
//   GET /tokenizer_info  ->  {"eos_token", "bos_token", "pad_token", "add_bos_token",
//                             "model_max_length", "chat_template"}  (a token's vocabulary
//                             text, or null; the file's Jinja template text, or null: clients
//                             such as lm-eval's --apply_chat_template render it themselves)
// Bad bodies are ApiError(400) naming the field; unknown fields are refused here (nothing
// else sends them).
#pragma once

#include <string>
#include <string_view>

#include "fasa/tokenizer/tokenizer.h"

namespace fasa::server {

std::string tokenize_body(const Tokenizer& tok, std::string_view body);
std::string detokenize_body(const Tokenizer& tok, std::string_view body);
// `n_ctx`: the context a sequence has (model_max_length); `chat_template`: the model file's
// tokenizer.chat_template ("" when it has none).
std::string tokenizer_info_body(const Tokenizer& tok, int n_ctx, const std::string& chat_template);

}  // namespace fasa::server
