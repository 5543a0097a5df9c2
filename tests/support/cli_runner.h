// Runs the real `fasa` binary (FASA_CLI_PATH) with an argv vector (no shell), capturing exit code,
// stdout and stderr, for end-to-end CLI tests.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fasa::test {

struct CliRun {
  int exit_code = -1;  // -1: killed by a signal (a crash)
  int signal = 0;
  std::string out;
  std::string err;
};

// `env` entries are added to (or replace) the current environment.
CliRun run_cli(const std::vector<std::string>& args,
               const std::map<std::string, std::string>& env = {});

// Starts the CLI and polls `ready(stderr so far)` every few milliseconds; once it returns true
// the process is killed with SIGKILL (a crash, a power cut, an OOM kill). Waits at most
// `max_wait_ms` for that, then kills it anyway. The result's `signal` is SIGKILL when it was
// killed, `exit_code` is set when it ended on its own first.
CliRun run_cli_and_kill(const std::vector<std::string>& args,
                        const std::function<bool(const std::string& err)>& ready,
                        int max_wait_ms = 120000);

// Expects a clean refusal (gtest checks): exit code 1, no signal, a "fasa: error: " line on
// stderr, and `needle` in stderr.
void expect_clean_error(const CliRun& r, const std::string& needle);

}  // namespace fasa::test
