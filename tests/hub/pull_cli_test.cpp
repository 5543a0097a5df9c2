// `fasa pull` through the real binary: stdout's last line, exit codes, the extra-models hook.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "fasa/core/sha256.h"

namespace fs = std::filesystem;

namespace {

struct CliRun {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class PullCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fasa-pull-cli-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    content_ = std::string(50000, 'g') + "fake gguf";
    fs::create_directories(root_ / "hf" / "org");
    std::ofstream(root_ / "hf" / "org" / "fake.gguf", std::ios::binary) << content_;
    write_models(fasa::sha256_hex(content_));
  }
  void TearDown() override { fs::remove_all(root_); }

  void write_models(const std::string& sha256) {
    std::ofstream(root_ / "models.json")
        << R"({"models": [{"name": "fake-model", "file": "fake.gguf",
        "sha256": ")"
        << sha256 << R"(", "hf_path": "org/fake.gguf", "description": "test"}]})";
  }

  // Runs the CLI with a private FASA_HOME, a file:// Hugging Face and the extra-models file.
  CliRun fasa(const std::string& args) {
    const fs::path out = root_ / "stdout.txt", err = root_ / "stderr.txt";
    const std::string cmd =
        "env FASA_HOME='" + (root_ / "home").string() + "' FASA_HF_URL='file://" +
        (root_ / "hf").string() + "' FASA_EXTRA_MODELS='" + (root_ / "models.json").string() +
        "' '" FASA_CLI_PATH "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    CliRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  fs::path final_path() const { return root_ / "home" / "models" / "fake-model" / "fake.gguf"; }

  fs::path root_;
  std::string content_;
};

TEST_F(PullCli, PrintsPathLastAndDoesNotDownloadTwice) {
  CliRun r = fasa("pull fake-model");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(last_line(r.out), final_path().string());
  EXPECT_TRUE(contains(r.err, "trying Hugging Face")) << r.err;
  EXPECT_EQ(slurp(final_path()), content_);

  fs::remove_all(root_ / "hf");
  r = fasa("pull fake-model --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(last_line(r.out), final_path().string());
  EXPECT_TRUE(contains(r.err, "already downloaded and verified")) << r.err;

  r = fasa("pull fake-model --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(j["path"], final_path().string());
  EXPECT_EQ(j["downloaded"], false);
  EXPECT_EQ(j["source"], "cache");
}

TEST_F(PullCli, CorruptedDownloadExitsNonZeroAndLeavesNothing) {
  write_models(fasa::sha256_hex("something else"));
  const CliRun r = fasa("pull fake-model -q");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "fasa: error: sha256 mismatch")) << r.err;
  EXPECT_TRUE(contains(r.err, fasa::sha256_hex(content_))) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(final_path()));
}

TEST_F(PullCli, UnknownOrMissingNameListsKnownModels) {
  CliRun r = fasa("pull no-such-model");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "unknown model 'no-such-model'")) << r.err;
  EXPECT_TRUE(contains(r.err, "smollm2-135m")) << r.err;
  EXPECT_TRUE(contains(r.err, "fake-model")) << r.err;
  r = fasa("pull");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "missing model name")) << r.err;
}

TEST_F(PullCli, ListShowsKnownModels) {
  CliRun r = fasa("pull --list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "smollm2-135m")) << r.out;
  EXPECT_TRUE(contains(r.out, "gemma3-270m")) << r.out;
  EXPECT_TRUE(contains(r.out, "fake-model")) << r.out;

  r = fasa("pull --list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j[0]["name"], "smollm2-135m");
  EXPECT_EQ(j[0]["cached"], false);
  EXPECT_EQ(j[1]["pypi"].size(), 4u);
}

}  // namespace
