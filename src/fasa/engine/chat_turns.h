// A conversation kept in one Session's cache across turns (`fasa chat`): each new user message
// appends only what the cache does not hold yet, the format's turn markers and the message,
// instead of prefilling the whole history again.
//
// The cache holds the tokens of the first rendered prompt, then each answer's generated tokens
// (as sampled, not re-tokenized), then each later turn's tokens. A later turn's tokens are the
// tokenization of the rendered chat from where the last answer's text ends: that tail starts with
// the format's end-of-turn marker (ChatML: "<|im_end|>\n<|im_start|>user\n...<|im_start|>
// assistant\n"), a special token, so cutting the text there tokenizes as the whole text would.
// A format that renders earlier turns differently once a new one follows (Qwen3 and DeepSeek-R1
// drop earlier reasoning) or whose tail does not start with a marker is rendered whole again:
// next() then says `fresh` and the caller empties the cache first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fasa/model/model.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

class ChatTurns {
 public:
  // `system`: the system message ("" = none; `default_system`, the one a ChatML template may
  // embed, then applies). `tok` must outlive this.
  ChatTurns(const Tokenizer& tok, ChatFormat fmt, std::string default_system, std::string system);
  // The model's tokenizer, chat format and default system prompt. Throws fasa::Error when the
  // model has no known chat format.
  static ChatTurns for_model(const Model& model, std::string system);

  struct Next {
    std::vector<int32_t> tokens;  // to append (to an empty cache when fresh)
    bool fresh = false;           // the cache must be emptied first
  };
  // The tokens that take the cache from what it holds to the chat with `user` as the next
  // message, ending with the assistant turn opener.
  Next next(const std::string& user) const;
  // After next(user)'s tokens were appended: the message joins the history.
  void commit_user(const std::string& user, const Next& n);
  // The answer to it: its text (what the history keeps), its generated tokens, and how many of
  // them the session appended (generation stops before appending the last token unless it ended
  // at an end-of-generation token; the next turn appends the rest first).
  void commit_answer(const std::string& text, const std::vector<int32_t>& tokens, int n_appended);
  // /reset: no history, nothing cached (the system message stays).
  void clear();

  const std::vector<ChatMessage>& messages() const { return msgs_; }
  // The conversation's tokens: those in the cache, then the answer's last token when it is owed.
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // How many of tokens() the cache holds.
  int n_cached() const { return static_cast<int>(tokens_.size()) - owed_; }
  ChatFormat format() const { return fmt_; }

 private:
  std::vector<int32_t> encode(const RenderedChat& chat, size_t from, bool add_bos) const;

  const Tokenizer& tok_;
  ChatFormat fmt_;
  std::string default_system_;
  std::string system_;
  std::vector<ChatMessage> msgs_;
  std::string covered_;  // the rendered text tokens_ stand for
  std::vector<int32_t> tokens_;
  int owed_ = 0;  // trailing tokens of tokens_ not yet in the cache
};

}  // namespace fasa
