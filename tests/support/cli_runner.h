// Runs the real `fasa` binary (FASA_CLI_PATH) with an argv vector (no shell), capturing exit code,
// stdout and stderr, for end-to-end CLI tests.
#pragma once

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

}  // namespace fasa::test
