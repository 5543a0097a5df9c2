#include "fasa/engine/prompt.h"

#include "fasa/io/gguf.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

std::vector<int32_t> text_prompt_tokens(const Model& model, const std::string& text,
                                        bool parse_special) {
  return model.require_tokenizer().encode(text, true, parse_special);
}

std::vector<int32_t> chat_prompt_tokens(const Model& model, const std::vector<ChatMessage>& msgs,
                                        bool parse_special) {
  const ChatFormat fmt = detect_chat_format(model.file());
  const RenderedChat chat = render_chat_parts(fmt, msgs, true, chat_default_system(model.file()));
  const Tokenizer& tok = model.require_tokenizer();
  if (parse_special) return tok.encode(chat.text, true, true);
  return tok.encode_with_literals(chat.text, true, chat.content, chat_markers(fmt));
}

}  // namespace fasa
