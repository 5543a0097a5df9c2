// `fasa chat`'s standard input, line by line, and its Ctrl-C: while an answer is generated
// Ctrl-C stops that answer; at the prompt it ends the program (llama.cpp's behaviour).
#pragma once

#include <csignal>
#include <string>

namespace fasa::cli {

class ChatInput {
 public:
  enum class Status { Line, Eof, Interrupted };

  // Installs the SIGINT handler; the destructor restores the one before.
  ChatInput();
  ~ChatInput();
  ChatInput(const ChatInput&) = delete;
  ChatInput& operator=(const ChatInput&) = delete;

  bool tty() const { return tty_; }
  // The next line, without its newline; a line ending in '\' goes on with the next one (joined
  // by "\n"). Interrupted: Ctrl-C at the prompt. A last line without a newline is a line.
  Status read_line(std::string* line);

  // Between these, Ctrl-C sets stop_requested() instead of interrupting the prompt.
  void begin_answer();
  void end_answer();
  static bool stop_requested();

 private:
  // One line as typed (no continuation).
  Status read_physical(std::string* line);

  bool tty_ = false;
  std::string buf_;  // read but not yet returned
  bool eof_ = false;
  struct sigaction old_action_ {};  // the SIGINT handler before
};

}  // namespace fasa::cli
