// `fasa chat` end to end on SmolLM2, at a real (pseudo-)terminal: the KV cache kept across turns
// (a later turn prefills only its own tokens, and its greedy answer equals a one-shot run of the
// same history), /stats, /reset, /help, Ctrl-C stopping an answer, Ctrl-C at the prompt, Ctrl-D;
// a piped stdin; `run -i`/`-cnv` as chat; `-f -` in run and tokenize.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "fasa/engine/prompt.h"
#include "fasa/io/gguf.h"
#include "fasa/model/model.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/cli_runner.h"
#include "support/model_path.h"
#include "support/pty_session.h"

namespace fasa {
namespace {

using test::PtySession;

constexpr int kTurnMs = 120000;  // one answer on a busy 2-core machine

// The line after each answer, then the prompt: groups 1 answer tokens, 2 prefill tokens,
// 3 context used, 4 the rest of the line.
const std::regex kTurnEnd(
    R"(\nfasa: (\d+) tokens, [\d.]+ t/s; prefill (\d+) tokens, [\d.]+ t/s; context (\d+)/\d+([^\n]*)\n> $)");
const std::regex kPrompt(R"(> $)");

struct Turn {
  std::string answer, rest;
  int n_gen = 0, n_prefill = 0, context = 0;
};

Turn turn(PtySession& s, const std::string& message) {
  s.send(message + "\n");
  Turn t;
  std::vector<std::string> m;
  EXPECT_TRUE(s.expect(kTurnEnd, kTurnMs, &t.answer, &m)) << s.output().substr(s.mark());
  if (m.empty()) return t;
  t.n_gen = std::stoi(m[1]);
  t.n_prefill = std::stoi(m[2]);
  t.context = std::stoi(m[3]);
  t.rest = m[4];
  return t;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(ChatCliRealModel, LaterTurnsReuseTheCacheAndAnswerAsAOneShotRun) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  PtySession s({"chat", "-m", path, "--temp", "0", "-c", "1024", "-n", "96"});
  ASSERT_TRUE(s.started());
  ASSERT_TRUE(s.expect(kPrompt, 60000)) << s.output();
  const std::string u1 = "My cat is called Pip. Reply with one short sentence.";
  const std::string u2 = "What is my cat called?";
  const Turn t1 = turn(s, u1);
  const Turn t2 = turn(s, u2);
  s.send("\x04");  // Ctrl-D at the prompt: the end
  EXPECT_EQ(s.wait_exit(30000), 0) << s.output();
  ASSERT_FALSE(t1.answer.empty());
  ASSERT_FALSE(t2.answer.empty());

  const auto model = Model::load(path);
  const Tokenizer& tok = model->require_tokenizer();
  const std::vector<ChatMessage> m1 = {{"user", u1}};
  const std::vector<ChatMessage> m2 = {{"user", u1}, {"assistant", t1.answer}, {"user", u2}};
  const size_t n1 = chat_prompt_tokens(*model, m1).size();
  const std::vector<int32_t> all2 = chat_prompt_tokens(*model, m2);
  // The first turn prefills its rendered prompt; the answer's tokens follow in the cache (it
  // ended at the end of the turn, so all of them were appended).
  EXPECT_EQ(t1.n_prefill, static_cast<int>(n1));
  EXPECT_EQ(t1.rest, "") << "the first answer should end at its end of turn";
  EXPECT_EQ(t1.context, static_cast<int>(n1) + t1.n_gen);
  // The second prefills only what the cache lacks: the whole history's tokens less the cached.
  EXPECT_EQ(t2.n_prefill, static_cast<int>(all2.size()) - t1.context);
  EXPECT_LT(t2.n_prefill * 3, static_cast<int>(all2.size()));

  // The same history rendered as one prompt (special tokens parsed as the chat format puts
  // them: the same tokens) and run once, greedily: the same answer.
  const ChatFormat fmt = detect_chat_format(model->file());
  const std::string history = render_chat(fmt, m2, true, chat_default_system(model->file()));
  ASSERT_EQ(tok.encode(history, true, true), all2);
  const std::string file = write_file("chat_cli_history.txt", history);
  const auto one_shot = test::run_cli({"run", "-m", path, "-f", file, "--parse-special", "--temp",
                                       "0", "-n", "96", "-c", "1024", "-q"});
  ASSERT_EQ(one_shot.exit_code, 0) << one_shot.err;
  EXPECT_EQ(one_shot.out, t2.answer + "\n");
  // And it depends on the first turn: asked alone, the model answers otherwise.
  const std::string alone =
      write_file("chat_cli_alone.txt",
                 render_chat(fmt, {{"user", u2}}, true, chat_default_system(model->file())));
  const auto without = test::run_cli({"run", "-m", path, "-f", alone, "--parse-special", "--temp",
                                      "0", "-n", "96", "-c", "1024", "-q"});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_NE(without.out, t2.answer + "\n");
}

TEST(ChatCliRealModel, CommandsCtrlCAndCtrlD) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  PtySession s({"chat", "-m", path, "--temp", "0", "-c", "2048"});
  ASSERT_TRUE(s.expect(kPrompt, 60000)) << s.output();
  // Ctrl-C while the answer streams: it stops there, the prompt comes back.
  s.send("Write a very long story about a dragon and a knight, with many chapters.\n");
  std::string streamed;
  ASSERT_TRUE(s.expect(std::regex(R"(\S+ \S+ \S+ \S+ )"), kTurnMs, &streamed)) << s.output();
  s.send("\x03");
  std::string answer;
  std::vector<std::string> m;
  ASSERT_TRUE(s.expect(kTurnEnd, kTurnMs, &answer, &m)) << s.output().substr(s.mark());
  EXPECT_EQ(m[4], "; stopped (Ctrl-C)");
  const int stopped_at = std::stoi(m[3]);
  EXPECT_LT(std::stoi(m[1]), 1000);
  // The program goes on: /stats, a next turn (after the stopped answer, kept in the history).
  s.send("/stats\n");
  ASSERT_TRUE(s.expect(std::regex(R"(fasa: session: 1 answers;[^\n]*\nfasa: context )" +
                                  std::to_string(stopped_at) + R"( of 2048 tokens[^\n]*\n> $)"),
                       10000))
      << s.output().substr(s.mark());
  const Turn next = turn(s, "Thanks. Say bye in three words.");
  EXPECT_GT(next.n_gen, 0);
  EXPECT_LT(next.n_prefill, 40);  // the new turn only, not the story again
  EXPECT_GT(next.context, stopped_at);
  // /reset: the next turn starts from an empty cache.
  s.send("/reset\n");
  ASSERT_TRUE(s.expect(std::regex("cleared\n> $"), 10000)) << s.output().substr(s.mark());
  const Turn fresh = turn(s, "Hi");
  const auto model = Model::load(path);
  const int n_hi = static_cast<int>(chat_prompt_tokens(*model, {{"user", "Hi"}}).size());
  EXPECT_EQ(fresh.n_prefill, n_hi);
  EXPECT_EQ(fresh.context, n_hi + fresh.n_gen);
  s.send("/help\n");
  ASSERT_TRUE(s.expect(std::regex(R"(/reset[^\n]*\n[\s\S]*/exit[\s\S]*\n> $)"), 10000))
      << s.output().substr(s.mark());
  s.send("/bogus\n");
  ASSERT_TRUE(s.expect(std::regex("unknown command /bogus[^\n]*\n> $"), 10000))
      << s.output().substr(s.mark());
  s.send("\x04");
  EXPECT_EQ(s.wait_exit(30000), 0) << s.output();
}

TEST(ChatCliRealModel, CtrlCAtThePromptEndsTheProgram) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  PtySession s({"chat", "-m", path});
  ASSERT_TRUE(s.expect(kPrompt, 60000)) << s.output();
  s.send("\x03");
  EXPECT_EQ(s.wait_exit(30000), 130) << s.output();
}

TEST(ChatCliRealModel, PipedStdinIsReadLineByLine) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto r =
      test::run_cli_with_stdin({"chat", "-m", path, "--temp", "0", "-n", "6", "-c", "512"},
                               "Hello\n\n/stats\nBye");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("> "), std::string::npos) << r.out;  // no prompt off a terminal
  const std::regex line(R"(fasa: 6 tokens, [\d.]+ t/s; prefill \d+ tokens[^\n]*stopped at -n 6)");
  const auto n_lines =
      std::distance(std::sregex_iterator(r.err.begin(), r.err.end(), line), std::sregex_iterator());
  EXPECT_EQ(n_lines, 2) << r.err;
  EXPECT_NE(r.err.find("fasa: session: 1 answers;"), std::string::npos) << r.err;
  // `run -cnv` (and -i) is chat; its -p is the system prompt, as llama.cpp's conversation mode.
  const auto cnv = test::run_cli_with_stdin({"run", "-m", path, "-cnv", "-p", "You are terse.",
                                             "--temp", "0", "-n", "6", "-q"},
                                            "Hello\n");
  ASSERT_EQ(cnv.exit_code, 0) << cnv.err;
  const auto chat = test::run_cli_with_stdin({"chat", "-m", path, "-s", "You are terse.", "--temp",
                                              "0", "-n", "6", "-q"},
                                             "Hello\n");
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_EQ(cnv.out, chat.out);
  EXPECT_FALSE(chat.out.empty());
  // Nothing to read: ends at once.
  const auto empty = test::run_cli_with_stdin({"chat", "-m", path, "-q"}, "");
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(empty.out, "");
}

// A context that fills up: the answer stops with a message saying what to do, a turn that
// cannot fit is refused (not sent), /reset makes room; the program goes on and ends with 0.
TEST(ChatCliRealModel, AFullContextSaysWhatToDo) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto model = Model::load(path);
  const int n_hi = static_cast<int>(chat_prompt_tokens(*model, {{"user", "Hi"}}).size());
  const std::string ctx = std::to_string(n_hi + 3);
  const auto r = test::run_cli_with_stdin({"chat", "-m", path, "--temp", "0", "-c", ctx},
                                          "Hi\nTell me more\n/reset\nHi\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 3 tokens fit after the prompt; the 4th is sampled, shown, and finds no room.
  const std::regex full_answer("fasa: 4 tokens, [^\n]*; prefill " + std::to_string(n_hi) +
                               " tokens[^\n]*; context " + ctx + "/" + ctx +
                               "; stopped: the context is full\n"
                               "fasa: the context is full: /reset clears the history");
  const auto n_full = std::distance(std::sregex_iterator(r.err.begin(), r.err.end(), full_answer),
                                    std::sregex_iterator());
  EXPECT_EQ(n_full, 2) << r.err;  // before and after /reset
  EXPECT_NE(r.err.find("fasa: the context is full: this turn needs "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cleared"), std::string::npos) << r.err;
}

TEST(ChatCliRealModel, ChatRefusesBadFlags) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  test::expect_clean_error(test::run_cli_with_stdin({"chat", "-m", path, "-n", "-2"}, ""), "-n");
  test::expect_clean_error(test::run_cli_with_stdin({"chat", "-m", path, "--repeat-penalty", "0"},
                                                    ""),
                           "--repeat-penalty");
  test::expect_clean_error(test::run_cli_with_stdin({"run", "-m", path, "-i", "-f", "x"}, ""),
                           "fasa chat");
}

TEST(ChatCliRealModel, DashFileReadsStdin) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const std::vector<std::string> run = {"run", "-m", path, "-n", "6", "--temp", "0", "-q"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = run;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const auto given = test::run_cli(with({"-p", "The sky is"}));
  const auto piped = test::run_cli_with_stdin(with({"-f", "-"}), "The sky is");
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, given.out);
  test::expect_clean_error(test::run_cli_with_stdin(with({"-f", "-"}), ""),
                           "standard input is empty");
  const auto tok_p = test::run_cli({"tokenize", "-m", path, "-p", "Hello world"});
  const auto tok_f = test::run_cli_with_stdin({"tokenize", "-m", path, "-f", "-"}, "Hello world");
  ASSERT_EQ(tok_f.exit_code, 0) << tok_f.err;
  EXPECT_EQ(tok_f.out, tok_p.out);
  test::expect_clean_error(test::run_cli_with_stdin({"tokenize", "-m", path, "-f", "-"}, ""),
                           "standard input is empty");
}

}  // namespace
}  // namespace fasa
