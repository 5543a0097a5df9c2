// Run an external program (curl, python3 -m pip) and wait for it. The argument vector goes to
// posix_spawnp as is: no shell, so nothing in it is ever interpreted.
#pragma once

#include <string>
#include <vector>

namespace fasa::hub {

struct ProcessResult {
  int exit_code = -1;  // valid when signal == 0
  int signal = 0;      // non-zero when the child was killed by a signal

  bool ok() const { return signal == 0 && exit_code == 0; }
  std::string describe() const;  // "exit status 3" / "killed by signal 9"
};

struct ProcessOptions {
  // The child's stdout is sent to our stderr, so that tools chatting on stdout (pip does) cannot
  // disturb fasa's own stdout, whose last line is the result.
  bool stdout_to_stderr = true;
};

// argv[0] is looked up in PATH. Throws fasa::Error if the program cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts = {});

}  // namespace fasa::hub
