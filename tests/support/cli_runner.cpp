#include "support/cli_runner.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

extern char** environ;

namespace fasa::test {

namespace {

std::string slurp_and_remove(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  unlink(path.c_str());
  return s.str();
}

}  // namespace

namespace {

struct Spawned {
  pid_t pid = 0;
  std::string out_path, err_path;
  std::string error;  // posix_spawn failed
};

Spawned spawn_cli(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env) {
  static int counter = 0;
  const std::string base =
      "/tmp/fasa-cli-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  Spawned sp;
  sp.out_path = base + ".out";
  sp.err_path = base + ".err";

  std::vector<std::string> argv_s = {FASA_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::map<std::string, std::string> vars;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) vars[k] = v;
  std::vector<std::string> env_s;
  for (const auto& [k, v] : vars) env_s.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, sp.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, sp.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = posix_spawn(&sp.pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) sp.error = "posix_spawn failed";
  return sp;
}

CliRun spawn_failed(const Spawned& sp) {
  CliRun r;
  r.err = sp.error;
  return r;
}

CliRun finish(const Spawned& sp, int status) {
  CliRun r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = slurp_and_remove(sp.out_path);
  r.err = slurp_and_remove(sp.err_path);
  return r;
}

}  // namespace

CliRun run_cli(const std::vector<std::string>& args,
               const std::map<std::string, std::string>& env) {
  const Spawned sp = spawn_cli(args, env);
  if (!sp.error.empty()) return spawn_failed(sp);
  int status = 0;
  waitpid(sp.pid, &status, 0);
  return finish(sp, status);
}

CliRun run_cli_and_kill(const std::vector<std::string>& args,
                        const std::function<bool(const std::string& err)>& ready, int max_wait_ms) {
  const Spawned sp = spawn_cli(args, {});
  if (!sp.error.empty()) return spawn_failed(sp);
  int status = 0;
  for (int waited_ms = 0;; waited_ms += 2) {
    if (waitpid(sp.pid, &status, WNOHANG) == sp.pid) return finish(sp, status);  // ended first
    std::ifstream in(sp.err_path, std::ios::binary);
    std::ostringstream err;
    err << in.rdbuf();
    if (ready(err.str()) || waited_ms >= max_wait_ms) break;
    usleep(2000);
  }
  kill(sp.pid, SIGKILL);
  waitpid(sp.pid, &status, 0);
  return finish(sp, status);
}

void expect_clean_error(const CliRun& r, const std::string& needle) {
  EXPECT_EQ(r.signal, 0) << "crashed: " << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("fasa: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << r.err;
}

}  // namespace fasa::test
