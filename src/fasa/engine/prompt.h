// Prompt text to token ids, the one way every front end does it (fasa run, the server): plain
// text gets BOS and no special-token parsing; chats are rendered with the model's template
// (and its default system prompt) and parsed with special tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fasa/model/model.h"
#include "fasa/tokenizer/chat.h"

namespace fasa {

std::vector<int32_t> text_prompt_tokens(const Model& model, const std::string& text);
// Ends with the assistant turn opener. Throws fasa::Error when the model has no known chat
// template.
std::vector<int32_t> chat_prompt_tokens(const Model& model, const std::vector<ChatMessage>& msgs);

}  // namespace fasa
