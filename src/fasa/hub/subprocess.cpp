#include "fasa/hub/subprocess.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fasa/core/error.h"

extern char** environ;

namespace fasa::hub {

std::string ProcessResult::describe() const {
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit status {}", exit_code);
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts) {
  FASA_CHECK(!argv.empty());
  std::vector<char*> c_argv;
  c_argv.reserve(argv.size() + 1);
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (opts.stdout_to_stderr)
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);

  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, c_argv[0], &actions, nullptr, c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  // glibc (>= 2.24) reports a failed exec here, e.g. ENOENT when the program is not in PATH.
  if (rc != 0) fail("cannot run '{}': {}", argv[0], std::strerror(rc));

  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail("waiting for '{}' failed: {}", argv[0], std::strerror(errno));
  }
  ProcessResult result;
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace fasa::hub
