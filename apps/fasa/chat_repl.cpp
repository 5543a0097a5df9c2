#include "chat_repl.h"

#include <cstdio>
#include <string_view>

#include <fmt/format.h>

#include "chat_input.h"
#include "chat_stats.h"
#include "fasa/core/error.h"
#include "fasa/engine/generate.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa::cli {
namespace {

void say(const std::string& text) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n", text.c_str());
}

class ChatRepl {
 public:
  ChatRepl(Session& s, ChatTurns& turns, const ChatSettings& cs) : s_(s), turns_(turns), cs_(cs) {}

  int run();

 private:
  // false: end the program.
  bool command(const std::string& line);
  void answer(const std::string& user);
  // Whether the cache can take the turn's tokens; when it cannot, says so and what to do.
  bool fits(const ChatTurns::Next& n);
  // The generation of the answer that follows the turn's tokens.
  GenerateOptions options_for(const ChatTurns::Next& n) const;
  void clear() {
    s_.reset();
    turns_.clear();
  }

  Session& s_;
  ChatTurns& turns_;
  const ChatSettings& cs_;
  ChatInput in_;
  ChatTotals totals_;
};

int ChatRepl::run() {
  for (;;) {
    if (in_.tty()) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    std::string line;
    const ChatInput::Status st = in_.read_line(&line);
    if (st == ChatInput::Status::Interrupted) {
      std::fputs("\n", stdout);
      std::fflush(stdout);
      return 130;
    }
    if (st == ChatInput::Status::Eof) {
      if (in_.tty()) std::fputs("\n", stdout);
      return 0;
    }
    if (line.find_first_not_of(" \t\n") == std::string::npos) continue;
    if (line[0] == '/' && line.compare(0, 2, "//") != 0) {
      if (!command(line)) return 0;
      continue;
    }
    if (line.compare(0, 2, "//") == 0) line.erase(0, 1);  // "//text" says "/text"
    if (const int64_t bad = find_invalid_utf8(line); bad >= 0) {
      say(fmt::format("fasa: the message is not valid UTF-8 (byte offset {}); not sent", bad));
      continue;
    }
    try {
      answer(line);
    } catch (const Error& e) {
      in_.end_answer();
      std::fputs("\n", stdout);
      say(std::string("fasa: error: ") + e.what() + "; the history is cleared");
      clear();
    }
  }
}

bool ChatRepl::command(const std::string& line) {
  const std::string cmd = line.substr(0, line.find_first_of(" \t"));
  if (cmd == "/exit" || cmd == "/quit") return false;
  if (cmd == "/reset") {
    clear();
    say("fasa: the history and the cache are cleared");
  } else if (cmd == "/stats") {
    std::fflush(stdout);
    std::fputs(totals_text(totals_, s_).c_str(), stderr);
  } else if (cmd == "/help") {
    std::fflush(stdout);
    std::fputs(chat_help_text().c_str(), stderr);
  } else {
    say("fasa: unknown command " + cmd + " (/help lists them; //text sends \"/text\")");
  }
  return true;
}

bool ChatRepl::fits(const ChatTurns::Next& n) {
  const int used = n.fresh ? 0 : s_.n_past();
  const int need = static_cast<int>(n.tokens.size());
  if (used + need <= s_.n_ctx()) return true;
  say(
      fmt::format("fasa: the context is full: this turn needs {} tokens and {} of {} are free; "
                  "/reset clears "
                  "the history (or start again with a larger -c)",
                  need, s_.n_ctx() - used, s_.n_ctx()));
  return false;
}

GenerateOptions ChatRepl::options_for(const ChatTurns::Next& n) const {
  std::vector<int32_t> context;  // what the answer follows: the conversation so far
  if (!n.fresh) {
    context.assign(turns_.tokens().begin(), turns_.tokens().begin() + turns_.n_cached());
  }
  context.insert(context.end(), n.tokens.begin(), n.tokens.end());
  GenerateOptions go;
  go.n_predict = cs_.n_predict;
  go.sampler = cs_.sampling.sampler;
  go.sampler.seed += static_cast<uint64_t>(totals_.answers);  // each answer its own draws
  go.rules = sampling_rules(cs_.sampling, context);
  go.stop = cs_.stop;
  go.stop_when = [](const std::string&) { return ChatInput::stop_requested(); };
  return go;
}

void ChatRepl::answer(const std::string& user) {
  const ChatTurns::Next n = turns_.next(user);
  if (!fits(n)) return;
  if (n.fresh && s_.n_past() > 0) {
    say(
        fmt::format("fasa: this chat format renders earlier turns anew: prefilling the whole "
                    "history ({} "
                    "tokens)",
                    n.tokens.size()));
  }
  const GenerateOptions go = options_for(n);
  if (n.fresh) s_.reset();
  const AttnStats before = s_.attn_stats();
  const int n_prompt_end = s_.n_past() + static_cast<int>(n.tokens.size());
  in_.begin_answer();
  const GenerateResult r = generate(s_, n.tokens, go, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  });
  in_.end_answer();
  std::fputs("\n", stdout);
  turns_.commit_user(user, n);
  turns_.commit_answer(r.text, r.tokens, s_.n_past() - n_prompt_end);
  TurnStats t;
  t.n_prefill = r.n_prompt;
  t.prefill_ms = r.prefill_ms;
  t.n_gen = static_cast<int>(r.tokens.size());
  t.decode_ms = r.decode_ms;
  t.attn = s_.attn_stats() - before;
  totals_.add(t);
  if (!cs_.quiet) say(turn_line(t, s_, r.stop_reason, cs_.n_predict));
  if (r.stop_reason == StopReason::Context) {
    say("fasa: the context is full: /reset clears the history (or start again with a larger -c)");
  }
}

}  // namespace

std::string chat_help_text() {
  return "fasa: commands:\n"
         "  /reset   clear the history and the cache (the system prompt stays)\n"
         "  /stats   the session's totals: tokens, speeds, context used\n"
         "  /help    this list\n"
         "  /exit    end (also /quit, or Ctrl-D at the prompt)\n"
         "  Ctrl-C stops an answer (what it said stays in the history); at the prompt it ends "
         "the program.\n"
         "  A line ending in \\ goes on with the next line; //text sends \"/text\".\n";
}

int run_chat_repl(Session& session, ChatTurns& turns, const ChatSettings& settings) {
  ChatRepl repl(session, turns, settings);
  return repl.run();
}

}  // namespace fasa::cli
