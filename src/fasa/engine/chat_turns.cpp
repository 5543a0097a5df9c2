#include "fasa/engine/chat_turns.h"

#include <algorithm>
#include <utility>

#include "fasa/io/gguf.h"

namespace fasa {

ChatTurns::ChatTurns(const Tokenizer& tok, ChatFormat fmt, std::string default_system,
                     std::string system)
    : tok_(tok), fmt_(fmt), default_system_(std::move(default_system)), system_(std::move(system)) {
  clear();
}

ChatTurns ChatTurns::for_model(const Model& model, std::string system) {
  return ChatTurns(model.require_tokenizer(), detect_chat_format(model.file()),
                   chat_default_system(model.file()), std::move(system));
}

void ChatTurns::clear() {
  msgs_.clear();
  if (!system_.empty()) msgs_.push_back({"system", system_});
  covered_.clear();
  tokens_.clear();
  owed_ = 0;
}

// The tokens of chat.text from byte `from` on, the messages' contents kept plain text.
std::vector<int32_t> ChatTurns::encode(const RenderedChat& chat, size_t from, bool add_bos) const {
  std::vector<TextRange> content;
  for (const TextRange& r : chat.content) {
    if (r.end <= from) continue;
    content.push_back({std::max(r.begin, from) - from, r.end - from});
  }
  return tok_.encode_with_literals(std::string_view(chat.text).substr(from), add_bos, content,
                                   chat_markers(fmt_));
}

ChatTurns::Next ChatTurns::next(const std::string& user) const {
  std::vector<ChatMessage> msgs = msgs_;
  msgs.push_back({"user", user});
  const RenderedChat chat = render_chat_parts(fmt_, msgs, true, default_system_);
  Next n;
  const bool extends = !tokens_.empty() && chat.text.compare(0, covered_.size(), covered_) == 0;
  const std::vector<std::string> markers = chat_markers(fmt_);
  const bool at_marker =
      extends && std::any_of(markers.begin(), markers.end(), [&](const std::string& m) {
        return chat.text.compare(covered_.size(), m.size(), m) == 0;
      });
  if (!at_marker) {
    n.fresh = true;
    n.tokens = encode(chat, 0, true);
    return n;
  }
  n.tokens.assign(tokens_.end() - owed_, tokens_.end());
  const std::vector<int32_t> tail = encode(chat, covered_.size(), false);
  n.tokens.insert(n.tokens.end(), tail.begin(), tail.end());
  return n;
}

void ChatTurns::commit_user(const std::string& user, const Next& n) {
  msgs_.push_back({"user", user});
  covered_ = render_chat(fmt_, msgs_, true, default_system_);
  if (n.fresh) {
    tokens_ = n.tokens;
  } else {  // n.tokens start with the owed ones, already in tokens_
    tokens_.insert(tokens_.end(), n.tokens.begin() + owed_, n.tokens.end());
  }
  owed_ = 0;
}

void ChatTurns::commit_answer(const std::string& text, const std::vector<int32_t>& tokens,
                              int n_appended) {
  msgs_.push_back({"assistant", text});
  covered_ += text;
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  owed_ = static_cast<int>(tokens.size()) - n_appended;
}

}  // namespace fasa
