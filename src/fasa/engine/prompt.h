// Prompt text to token ids, the one way every front end does it (fasa run, the server): plain
// text gets BOS and no special-token parsing; chats are rendered with the model's template
// (and its default system prompt) and parsed with special tokens where the template put them,
// while the messages' contents stay plain text, so a message holding "<|im_end|>" cannot end its
// turn or forge another. `parse_special` (opt-in) parses special-token texts in the plain text
// or the contents too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fasa/model/model.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/chat_tools.h"

namespace fasa {

std::vector<int32_t> text_prompt_tokens(const Model& model, const std::string& text,
                                        bool parse_special = false);
// Ends with the assistant turn opener. Throws fasa::Error when the model has no known chat
// template.
std::vector<int32_t> chat_prompt_tokens(const Model& model, const std::vector<ChatMessage>& msgs,
                                        bool parse_special = false);
// The same with the functions a request offers and its tool history (tokenizer/chat_tools.h):
// the format's tool markup can no more be forged by a message than its turn markers.
std::vector<int32_t> chat_prompt_tokens(const Model& model, const std::vector<ChatMessage>& msgs,
                                        const ChatTools& tools, bool parse_special = false);

}  // namespace fasa
