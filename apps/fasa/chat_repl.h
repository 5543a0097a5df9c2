// `fasa chat`'s loop: read a message, append its turn to the session (only what the cache lacks:
// engine/chat_turns.h), stream the answer, say what it cost; /reset, /stats, /help, /exit.
#pragma once

#include <string>
#include <vector>

#include "fasa/engine/chat_turns.h"
#include "fasa/engine/session.h"
#include "sampling_options.h"

namespace fasa::cli {

struct ChatSettings {
  int n_predict = -1;  // tokens per answer at most (-1: until the end of the turn)
  SamplingArgs sampling;
  std::vector<std::string> stop;
  bool quiet = false;  // no statistics lines
};

// Runs the conversation on standard input until /exit or its end (exit status 0), or Ctrl-C at
// the prompt (130, as llama.cpp).
int run_chat_repl(Session& session, ChatTurns& turns, const ChatSettings& settings);

// The commands, for /help.
std::string chat_help_text();

}  // namespace fasa::cli
