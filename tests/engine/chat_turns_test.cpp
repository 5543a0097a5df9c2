// ChatTurns (`fasa chat`): each later turn appends only the tokens the cache lacks, and the
// conversation's tokens equal those of the whole chat rendered and tokenized at once, so a
// multi-turn answer sees exactly what a one-shot run of the same history sees.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fasa/engine/chat_turns.h"
#include "fasa/engine/prompt.h"
#include "fasa/io/gguf.h"
#include "fasa/model/model.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/model_path.h"

namespace fasa {
namespace {

std::vector<int32_t> joined(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Two turns with answers tokenized as a model would have generated them: the tokens of the
// conversation so far, then the next turn's, equal the one-shot tokens of the same messages.
void expect_turns_match_one_shot(const Model& model, const std::string& system) {
  const Tokenizer& tok = model.require_tokenizer();
  ChatTurns chat = ChatTurns::for_model(model, system);
  std::vector<ChatMessage> msgs;
  if (!system.empty()) msgs.push_back({"system", system});
  const std::vector<std::string> users = {"My name is Ada. Say hello.",
                                          "What is my name? <|im_end|> is plain text here."};
  const std::vector<std::string> answers = {"Hello, Ada! Nice to meet you.", "Your name is Ada."};
  for (size_t t = 0; t < users.size(); ++t) {
    SCOPED_TRACE("turn " + std::to_string(t));
    msgs.push_back({"user", users[t]});
    const ChatTurns::Next n = chat.next(users[t]);
    EXPECT_EQ(n.fresh, t == 0);
    const std::vector<int32_t> one_shot = chat_prompt_tokens(model, msgs);
    EXPECT_EQ(joined(chat.tokens(), n.tokens), one_shot);
    if (t > 0) {  // only the new turn: not the first's tokens again
      EXPECT_EQ(n.tokens.size(), one_shot.size() - chat.tokens().size());
      EXPECT_GT(chat.tokens().size(), one_shot.size() / 3);
    }
    chat.commit_user(users[t], n);
    EXPECT_EQ(chat.tokens(), one_shot);
    EXPECT_EQ(chat.n_cached(), static_cast<int>(one_shot.size()));
    const std::vector<int32_t> answer = tok.encode(answers[t], false, false);
    chat.commit_answer(answers[t], answer, static_cast<int>(answer.size()));  // ended at EOS
    msgs.push_back({"assistant", answers[t]});
  }
  EXPECT_EQ(chat.messages().size(), msgs.size());
}

TEST(ChatTurnsRealModel, LaterTurnsAppendOnlyWhatTheCacheLacks) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto model = Model::load(path);
  expect_turns_match_one_shot(*model, "");
  expect_turns_match_one_shot(*model, "You are terse.");
}

TEST(ChatTurnsRealModel, GemmaTurnsToo) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const auto model = Model::load(path);
  expect_turns_match_one_shot(*model, "");
}

// An answer stopped before its last token was appended (a token limit, Ctrl-C): the next turn
// appends that token first.
TEST(ChatTurnsRealModel, AnOwedTokenComesFirst) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto model = Model::load(path);
  const Tokenizer& tok = model->require_tokenizer();
  ChatTurns chat = ChatTurns::for_model(*model, "");
  chat.commit_user("Count.", chat.next("Count."));
  const std::vector<int32_t> answer = tok.encode("One, two, three", false, false);
  ASSERT_GE(answer.size(), 2u);
  chat.commit_answer("One, two, three", answer, static_cast<int>(answer.size()) - 1);
  EXPECT_EQ(chat.n_cached(), static_cast<int>(chat.tokens().size()) - 1);
  const ChatTurns::Next n = chat.next("Go on.");
  ASSERT_FALSE(n.fresh);
  EXPECT_EQ(n.tokens.front(), answer.back());
  const std::vector<int32_t> one_shot =
      chat_prompt_tokens(*model, {{"user", "Count."},
                                  {"assistant", "One, two, three"},
                                  {"user", "Go on."}});
  EXPECT_EQ(joined({chat.tokens().begin(), chat.tokens().end() - 1}, n.tokens), one_shot);
  chat.commit_user("Go on.", n);
  EXPECT_EQ(chat.tokens(), one_shot);
  EXPECT_EQ(chat.n_cached(), static_cast<int>(one_shot.size()));
  chat.clear();
  EXPECT_TRUE(chat.tokens().empty());
  EXPECT_TRUE(chat.messages().empty());
  EXPECT_TRUE(chat.next("Hi").fresh);
}

// A format that renders earlier turns differently once a new one follows (Qwen3's drops earlier
// reasoning) is rendered whole again: fresh, and the tokens are the one-shot ones.
TEST(ChatTurnsRealModel, AFormatThatRerendersEarlierTurnsStartsFresh) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto model = Model::load(path);
  const Tokenizer& tok = model->require_tokenizer();
  ChatTurns chat(tok, ChatFormat::ChatMLThink, "", "");
  chat.commit_user("Hi", chat.next("Hi"));
  const std::string answer = "<think>\nthey greet me\n</think>\n\nHello!";
  const std::vector<int32_t> ids = tok.encode(answer, false, false);
  chat.commit_answer(answer, ids, static_cast<int>(ids.size()));
  const ChatTurns::Next n = chat.next("Bye");
  EXPECT_TRUE(n.fresh);
  const std::vector<ChatMessage> msgs = {{"user", "Hi"}, {"assistant", answer}, {"user", "Bye"}};
  const RenderedChat whole = render_chat_parts(ChatFormat::ChatMLThink, msgs, true);
  EXPECT_EQ(whole.text.find("they greet me"), std::string::npos);  // dropped
  EXPECT_EQ(n.tokens, tok.encode_with_literals(whole.text, true, whole.content,
                                               chat_markers(ChatFormat::ChatMLThink)));
  chat.commit_user("Bye", n);
  EXPECT_EQ(chat.tokens(), n.tokens);
}

}  // namespace
}  // namespace fasa
