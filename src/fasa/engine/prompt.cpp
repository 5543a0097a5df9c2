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

std::vector<int32_t> chat_prompt_tokens(const Model& model, const std::vector<ChatMessage>& msgs,
                                        const ChatTools& tools, bool parse_special) {
  if (!tools.offered() && !has_tool_history(msgs))
    return chat_prompt_tokens(model, msgs, parse_special);
  const std::string tmpl = model.file().get_string_or("tokenizer.chat_template", "");
  const ChatFormat fmt = detect_chat_format(model.file());
  const ToolFormat tf = detect_tool_format(fmt, tmpl);
  const RenderedChat chat =
      render_chat_tools(fmt, tf, msgs, tools, true, chat_default_system(model.file()));
  const Tokenizer& tok = model.require_tokenizer();
  if (parse_special) return tok.encode(chat.text, true, true);
  std::vector<std::string> markers = chat_markers(fmt);
  for (std::string& m : tool_markers(tf)) markers.push_back(std::move(m));
  return tok.encode_with_literals(chat.text, true, chat.content, markers);
}

}  // namespace fasa
