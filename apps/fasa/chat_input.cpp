#include "chat_input.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fasa/core/error.h"

namespace fasa::cli {
namespace {

volatile std::sig_atomic_t g_answering = 0;  // an answer is being generated
volatile std::sig_atomic_t g_stop = 0;       // Ctrl-C during the answer
volatile std::sig_atomic_t g_interrupt = 0;  // Ctrl-C at the prompt

extern "C" void on_sigint(int) {
  if (g_answering) {
    g_stop = 1;
  } else {
    g_interrupt = 1;
  }
}

}  // namespace

ChatInput::ChatInput() : tty_(isatty(STDIN_FILENO) != 0) {
  g_answering = 0;
  g_stop = 0;
  g_interrupt = 0;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  // Interrupted writes and reads go on; the prompt's poll() returns on the signal regardless
  // (poll is never restarted), and its timeout bounds the wait in any case.
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &old_action_);
}

ChatInput::~ChatInput() { sigaction(SIGINT, &old_action_, nullptr); }

void ChatInput::begin_answer() {
  g_stop = 0;
  g_answering = 1;
}

void ChatInput::end_answer() {
  g_answering = 0;
  g_stop = 0;
}

bool ChatInput::stop_requested() { return g_stop != 0; }

ChatInput::Status ChatInput::read_physical(std::string* line) {
  for (;;) {
    if (g_interrupt) {
      g_interrupt = 0;
      buf_.clear();
      return Status::Interrupted;
    }
    const size_t nl = buf_.find('\n');
    if (nl != std::string::npos) {
      *line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return Status::Line;
    }
    if (eof_) {
      if (buf_.empty()) return Status::Eof;
      *line = std::move(buf_);
      buf_.clear();
      return Status::Line;
    }
    // poll with a timeout, so a Ctrl-C that lands just before the read is seen at once.
    pollfd p{STDIN_FILENO, POLLIN, 0};
    const int ready = poll(&p, 1, 200);
    if (ready < 0 && errno != EINTR) fail("cannot read standard input: {}", std::strerror(errno));
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      fail("cannot read standard input: {}", std::strerror(errno));
    }
    if (n == 0) eof_ = true;  // a pipe's end, or Ctrl-D on a terminal
    buf_.append(chunk, static_cast<size_t>(std::max<ssize_t>(n, 0)));
  }
}

ChatInput::Status ChatInput::read_line(std::string* line) {
  line->clear();
  for (;;) {
    std::string part;
    const Status s = read_physical(&part);
    if (s == Status::Interrupted) return s;
    if (s == Status::Eof) return line->empty() ? Status::Eof : Status::Line;
    if (!part.empty() && part.back() == '\r') part.pop_back();
    if (part.empty() || part.back() != '\\') {
      *line += part;
      return Status::Line;
    }
    part.pop_back();
    *line += part + "\n";
  }
}

}  // namespace fasa::cli
