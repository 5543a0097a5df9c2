#include "support/pty_session.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

extern char** environ;

namespace fasa::test {
namespace {

std::vector<char*> argv_of(std::vector<std::string>& argv_s) {
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string slurp_and_remove(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  unlink(path.c_str());
  return s.str();
}

}  // namespace

PtySession::PtySession(const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {FASA_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv = argv_of(argv_s);
  const pid_t pid = forkpty(&master_, nullptr, nullptr, nullptr);
  if (pid == 0) {  // the child: a session leader with the terminal as its controlling one
    termios t{};
    tcgetattr(STDIN_FILENO, &t);
    t.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    t.c_oflag &= ~static_cast<tcflag_t>(OPOST);
    tcsetattr(STDIN_FILENO, TCSANOW, &t);
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
}

PtySession::~PtySession() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (master_ >= 0) close(master_);
}

void PtySession::send(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(master_, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

bool PtySession::read_some(int timeout_ms) {
  pollfd p{master_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return true;  // nothing yet
  char buf[4096];
  const ssize_t n = read(master_, buf, sizeof buf);
  if (n <= 0) return false;  // EIO: the program closed the terminal
  out_.append(buf, static_cast<size_t>(n));
  return true;
}

bool PtySession::expect(const std::regex& re, int timeout_ms, std::string* before,
                        std::vector<std::string>* groups) {
  const int64_t end = now_ms() + timeout_ms;
  for (;;) {
    const std::string tail = out_.substr(mark_);
    std::smatch found;
    if (std::regex_search(tail, found, re)) {
      if (before) *before = tail.substr(0, static_cast<size_t>(found.position(0)));
      mark_ += static_cast<size_t>(found.position(0) + found.length(0));
      if (groups) groups->assign(found.begin(), found.end());
      return true;
    }
    const int64_t left = end - now_ms();
    if (left <= 0 || !read_some(static_cast<int>(std::min<int64_t>(left, 100)))) return false;
  }
}

int PtySession::wait_exit(int timeout_ms) {
  const int64_t end = now_ms() + timeout_ms;
  while (!reaped_) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      break;
    }
    if (now_ms() > end) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      reaped_ = true;
      return -1;
    }
    read_some(20);
  }
  for (size_t before = out_.size() + 1; out_.size() != before;) {  // what is left to read
    before = out_.size();
    if (!read_some(0)) break;
  }
  return status_;
}

CliRun run_cli_with_stdin(const std::vector<std::string>& args, const std::string& input) {
  static int counter = 0;
  const std::string base =
      "/tmp/fasa-cli-stdin-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  std::vector<std::string> argv_s = {FASA_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv = argv_of(argv_s);
  int fds[2];
  CliRun r;
  if (pipe(fds) != 0) return r;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  posix_spawn_file_actions_addopen(&fa, 1, (base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&fa, 2, (base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[0]);
  if (rc != 0) {
    close(fds[1]);
    r.err = "posix_spawn failed";
    return r;
  }
  signal(SIGPIPE, SIG_IGN);  // the program may end before it reads everything
  for (size_t done = 0; done < input.size();) {
    const ssize_t n = write(fds[1], input.data() + done, input.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fds[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = slurp_and_remove(base + ".out");
  r.err = slurp_and_remove(base + ".err");
  return r;
}

}  // namespace fasa::test
