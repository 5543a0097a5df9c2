// A pulled model is checked against the sha256 recorded beside it before it loads: cheap while
// its size and mtime are the recorded ones, hashed again when they changed (a damaged file is
// an error naming both hashes, not garbage), and always with `fasa run --verify`.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "fasa/core/sha256.h"
#include "fasa/hub/cache.h"
#include "support/cli_runner.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

namespace fs = std::filesystem;

// Flips one byte near the end of `file` (tensor data), keeping its size; with `keep_mtime` its
// modification time is put back, so only a full hash can tell.
void damage(const fs::path& file, bool keep_mtime) {
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-9, std::ios::end);
    char c = 0;
    f.read(&c, 1);
    f.seekp(-9, std::ios::end);
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  if (keep_mtime) {
    const timespec times[2] = {st.st_atim, st.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
  }
}

TEST(ModelVerify, APulledModelIsCheckedAgainstItsRecordedSha256) {
  const fs::path dir = test::fresh_dir("model_verify");
  test::TinySpec spec;
  spec.byte_tokenizer = true;
  const fs::path model = dir / "tiny.gguf";
  test::write_tiny_model(model.string(), spec);
  const std::string sha = sha256_file_hex(model);
  hub::write_marker(model, sha);
  const std::vector<std::string> run = {"run", "-m", model.string(), "-p", "ab",
                                        "-n",  "1",  "--temp",       "0"};
  auto with_verify = run;
  with_verify.push_back("--verify");
  EXPECT_EQ(test::run_cli(run).exit_code, 0);
  EXPECT_EQ(test::run_cli(with_verify).exit_code, 0);

  damage(model, /*keep_mtime=*/true);  // same size and mtime: only --verify hashes it
  const test::CliRun verified = test::run_cli(with_verify);
  EXPECT_EQ(verified.exit_code, 1) << verified.err;
  EXPECT_NE(verified.err.find("is damaged: its sha256 is"), std::string::npos) << verified.err;
  EXPECT_NE(verified.err.find(sha), std::string::npos) << verified.err;

  damage(model, /*keep_mtime=*/false);  // undamaged again, but touched: hashed, and passes
  EXPECT_EQ(sha256_file_hex(model), sha);
  EXPECT_EQ(test::run_cli(run).exit_code, 0);
  EXPECT_TRUE(hub::marker_matches(model, sha));  // the marker refreshed for the new mtime

  damage(model, /*keep_mtime=*/false);  // damaged and touched: every load hashes it and stops
  const test::CliRun plain = test::run_cli(run);
  EXPECT_EQ(plain.exit_code, 1) << plain.err;
  EXPECT_NE(plain.err.find("is damaged"), std::string::npos) << plain.err;

  const fs::path unpulled = dir / "unpulled.gguf";  // no marker: nothing to verify against
  test::write_tiny_model(unpulled.string(), spec);
  const test::CliRun none =
      test::run_cli({"run", "-m", unpulled.string(), "-p", "ab", "-n", "1", "--verify"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no unpulled.gguf.sha256 beside it"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace fasa
