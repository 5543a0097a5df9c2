// Runs the real `fasa` binary (FASA_CLI_PATH) the way a person at a terminal does: on a
// pseudo-terminal (stdin, stdout and stderr), where ^C (0x03) sends SIGINT and ^D (0x04) at the
// start of a line is the end of input. The terminal does not echo input and does not turn "\n"
// into "\r\n", so the output is what the program wrote. Also: a run whose stdin is a pipe.
#pragma once

#include <sys/types.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "support/cli_runner.h"

namespace fasa::test {

class PtySession {
 public:
  explicit PtySession(const std::vector<std::string>& args);
  ~PtySession();  // kills the program when it still runs
  PtySession(const PtySession&) = delete;
  PtySession& operator=(const PtySession&) = delete;

  bool started() const { return pid_ > 0; }
  void send(const std::string& bytes);
  // Reads until `re` matches the output after mark() (then the mark moves past the match), for
  // at most timeout_ms. False (and the mark stays) on a timeout or the end of the output.
  // *before: the output between the old mark and the match; *groups: the match, then its
  // groups.
  bool expect(const std::regex& re, int timeout_ms, std::string* before = nullptr,
              std::vector<std::string>* groups = nullptr);
  const std::string& output() const { return out_; }  // everything so far
  size_t mark() const { return mark_; }
  // Waits for the program's end: its exit code, or -1 (a signal, or still running after
  // timeout_ms: then it is killed).
  int wait_exit(int timeout_ms);

 private:
  bool read_some(int timeout_ms);  // false at the end of the output

  pid_t pid_ = -1;
  int master_ = -1;
  std::string out_;
  size_t mark_ = 0;
  int status_ = -1;
  bool reaped_ = false;
};

// The CLI with `input` on a pipe as its standard input (and stdout, stderr captured).
CliRun run_cli_with_stdin(const std::vector<std::string>& args, const std::string& input);

}  // namespace fasa::test
