// Crash-safe outputs (io/atomic_file.h): a failure or a kill in the middle of a write leaves the
// old file byte for byte; the temporary file never takes the target's name; errors are clear.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fasa/io/atomic_file.h"
#include "support/expect_error.h"
#include "support/temp_files.h"

namespace fasa {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::names_in;
using test::slurp;

// A fresh, empty directory per test.
fs::path fresh_dir(const std::string& name) { return test::fresh_dir("atomic_" + name); }

TEST(AtomicFile, WritesReplacesAndKeepsPermissions) {
  const fs::path d = fresh_dir("write");
  const fs::path p = d / "out.json";
  write_file_atomic(p.string(), "first\n");
  EXPECT_EQ(slurp(p), "first\n");
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write_file_atomic(p.string(), "second\n");
  EXPECT_EQ(slurp(p), "second\n");
  EXPECT_EQ(fs::status(p).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_EQ(names_in(d), std::vector<std::string>{"out.json"});  // no temporary file left
}

TEST(AtomicFile, UncommittedWriteLeavesTheOldFile) {
  const fs::path d = fresh_dir("discard");
  const fs::path p = d / "calib.json";
  write_file_atomic(p.string(), "old, good\n");
  {
    AtomicFile f(p.string());
    f.write("new but never finish");
    EXPECT_TRUE(fs::exists(f.temp_path()));
    EXPECT_EQ(slurp(p), "old, good\n");  // nothing visible before commit
  }                                      // an exception unwinding through here, say
  EXPECT_EQ(slurp(p), "old, good\n");
  EXPECT_EQ(names_in(d), std::vector<std::string>{"calib.json"});
}

// Child bodies of the death tests below (a macro argument cannot hold a braced list).
void write_past_file_size_limit(const std::string& path) {
  signal(SIGXFSZ, SIG_IGN);
  rlimit lim{4096, 4096};
  setrlimit(RLIMIT_FSIZE, &lim);
  try {
    write_file_atomic(path, std::string(1 << 20, 'x'));
  } catch (const Error& e) {
    fprintf(stderr, "%s\n", e.what());
    _exit(3);
  }
  _exit(0);
}

void killed_while_writing(const std::string& path) {
  AtomicFile f(path);
  f.write(std::string(100000, 'y'));
  raise(SIGKILL);
}

// A write that fails half way (the file-size limit stands in for a full disk): the old file is
// intact, the error names the file, no temporary file is left. In a child process, so the limit
// stays there.
TEST(AtomicFile, FailureMidWriteLeavesTheOldFile) {
  GTEST_FLAG_SET(death_test_style, "fast");  // the child shares this test's paths
  const fs::path d = fresh_dir("midwrite");
  const fs::path p = d / "results.json";
  write_file_atomic(p.string(), "old, good\n");
  EXPECT_EXIT(write_past_file_size_limit(p.string()), ::testing::ExitedWithCode(3),
              "cannot write '.*results.json': File too large");
  EXPECT_EQ(slurp(p), "old, good\n");
  EXPECT_EQ(names_in(d), std::vector<std::string>{"results.json"});
}

// Killed half way through writing: the old file is intact; the temporary file the dead process
// left is hidden (".NAME.fasa-tmp-PID-N") and the next write of the same file removes it.
TEST(AtomicFile, KillMidWriteLeavesTheOldFileAndTheNextWriteCleansUp) {
  GTEST_FLAG_SET(death_test_style, "fast");  // the child shares this test's paths
  const fs::path d = fresh_dir("kill");
  const fs::path p = d / "calib.json";
  write_file_atomic(p.string(), "old, good\n");
  EXPECT_EXIT(killed_while_writing(p.string()), ::testing::KilledBySignal(SIGKILL), "");
  EXPECT_EQ(slurp(p), "old, good\n");
  const auto left = names_in(d);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].rfind(".calib.json.fasa-tmp-", 0), 0u) << left[0];
  write_file_atomic(p.string(), "new\n");
  EXPECT_EQ(slurp(p), "new\n");
  EXPECT_EQ(names_in(d), std::vector<std::string>{"calib.json"});
}

TEST(AtomicFile, SymlinkIsFollowed) {
  const fs::path d = fresh_dir("link");
  write_file_atomic((d / "real.json").string(), "old\n");
  fs::create_symlink("real.json", d / "link.json");
  write_file_atomic((d / "link.json").string(), "new\n");
  EXPECT_TRUE(fs::is_symlink(d / "link.json"));
  EXPECT_EQ(slurp(d / "real.json"), "new\n");
}

TEST(AtomicFile, UnwritableTargetsFailAtOpen) {
  const fs::path d = fresh_dir("errors");
  expect_error([&] { AtomicFile f((d / "no_such_dir" / "x.json").string()); },
               "directory '" + (d / "no_such_dir").string() + "' does not exist");
  expect_error([&] { AtomicFile f(d.string()); }, "it is a directory");
  expect_error([&] { AtomicFile f("/dev/null"); }, "not a regular file");
  // /proc refuses new files even to root.
  expect_error([] { AtomicFile f("/proc/fasa_atomic_test.json"); },
               "cannot write '/proc/fasa_atomic_test.json'");
  if (geteuid() != 0) {  // root writes into read-only directories
    const fs::path ro = d / "ro";
    fs::create_directories(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    expect_error([&] { AtomicFile f((ro / "x.json").string()); }, "Permission denied");
    fs::permissions(ro, fs::perms::owner_all);
  }
  expect_error([] { AtomicFile f(""); }, "no output file name");
  EXPECT_EQ(names_in(d), std::vector<std::string>{});
}

TEST(AtomicFile, AppendDurableWritesWholeRecords) {
  const fs::path d = fresh_dir("append");
  const fs::path p = d / "log.jsonl";
  write_file_atomic(p.string(), "header\n");
  const int fd = ::open(p.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  append_durable(fd, "one\n", p.string());
  append_durable(fd, "two\n", p.string());
  ::close(fd);
  EXPECT_EQ(slurp(p), "header\none\ntwo\n");
  expect_error([&] { append_durable(-1, "x\n", p.string()); }, "cannot write '" + p.string());
}

}  // namespace
}  // namespace fasa
