// Inputs a user names are regular files: a FIFO (with nobody writing to it), a directory or a
// device given as the model, a prompt file, a calibration, a task file, a prompt cache or an API
// key file is refused at once by name — one error line, exit 1, never a hang.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "support/cli_runner.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

// Runs the CLI, killing it after 20 s: a command that blocks on a FIFO fails the test instead
// of hanging it.
test::CliRun run_bounded(const std::vector<std::string>& args) {
  return test::run_cli_and_kill(
      args, [](const std::string&) { return false; }, 20000);
}

void expect_refused(const test::CliRun& r, const std::string& needle) {
  EXPECT_EQ(r.signal, 0) << "hung or crashed: " << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("fasa: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << r.err;
}

TEST(SpecialFiles, FifosDirectoriesAndDevicesAreRefusedByName) {
  const auto dir = test::fresh_dir("special_files");
  const std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  test::TinySpec spec;
  spec.byte_tokenizer = true;
  const std::string model = (dir / "tiny.gguf").string();
  test::write_tiny_model(model, spec);
  const std::string d = dir.string();

  expect_refused(run_bounded({"run", "-m", fifo, "-p", "hi", "-n", "1", "--temp", "0"}), "a FIFO");
  expect_refused(run_bounded({"run", "-m", model, "-f", fifo, "-n", "1", "--temp", "0"}), "a FIFO");
  expect_refused(run_bounded({"run", "-m", model, "-f", d, "-n", "1", "--temp", "0"}),
                 "a directory");
  expect_refused(run_bounded({"run", "-m", model, "-f", "/dev/zero", "-n", "1", "--temp", "0"}),
                 "a character device");
  expect_refused(run_bounded({"run", "-m", model, "-p", "hi", "-n", "1", "--temp", "0", "--policy",
                              "fasa:budget=16,calib=" + fifo}),
                 "a FIFO");
  expect_refused(run_bounded({"run", "-m", model, "-p", "hi", "-n", "1", "--temp", "0",
                              "--prompt-cache", fifo}),
                 "a FIFO");
  expect_refused(run_bounded({"eval", "tasks", "-m", model, "--tasks", fifo}), "a FIFO");
  expect_refused(run_bounded({"serve", "-m", model, "--port", "0", "--api-key-file", fifo}),
                 "a FIFO");
  expect_refused(run_bounded({"eval", "ppl", "-m", model, "--text", fifo, "--ctx", "16"}),
                 "a FIFO");
}

TEST(SpecialFiles, ApiKeyFilesAreCheckedLineByLine) {
  const auto dir = test::fresh_dir("api_key_files");
  test::TinySpec spec;
  spec.byte_tokenizer = true;
  const std::string model = (dir / "tiny.gguf").string();
  test::write_tiny_model(model, spec);
  const std::string empty = (dir / "empty.keys").string();
  std::ofstream(empty) << "# only a comment\n\n";
  expect_refused(run_bounded({"serve", "-m", model, "--port", "0", "--api-key-file", empty}),
                 "holds no key");
  const std::string spaced = (dir / "spaced.keys").string();
  std::ofstream(spaced) << "two words\n";
  expect_refused(run_bounded({"serve", "-m", model, "--port", "0", "--api-key-file", spaced}),
                 "space or control byte");
  expect_refused(run_bounded({"serve", "-m", model, "--port", "0", "--api-key", ""}),
                 "--api-key must not be empty");
}

}  // namespace
}  // namespace fasa
