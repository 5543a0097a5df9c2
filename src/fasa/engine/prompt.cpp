#include "fasa/engine/prompt.h"

#include "fasa/io/gguf.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

std::vector<int32_t> text_prompt_tokens(const Model& model, const std::string& text) {
  return model.require_tokenizer().encode(text, true, false);
}

std::vector<int32_t> chat_prompt_tokens(const Model& model,
                                        const std::vector<ChatMessage>& msgs) {
  const ChatFormat fmt = detect_chat_format(model.file());
  const std::string rendered = render_chat(fmt, msgs, true, chat_default_system(model.file()));
  return model.require_tokenizer().encode(rendered, true, true);
}

}  // namespace fasa
