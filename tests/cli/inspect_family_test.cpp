// `fasa inspect` names the family, its RoPE scaling and the ignored tensors of the paper's model
// families (random-weight files with their real metadata, src/tests/support/family_model.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/family_model.h"
#include "support/temp_files.h"

namespace fasa {
namespace {

std::string inspect(const std::string& family, bool json = false) {
  const std::string path = (test::fresh_dir("inspect_" + family) / "m.gguf").string();
  write_family_model(family, 1, path);
  std::vector<std::string> args = {"inspect", path};
  if (json) args.push_back("--json");
  const test::CliRun r = test::run_cli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

bool has(const std::string& out, const std::string& part) {
  return out.find(part) != std::string::npos;
}

TEST(InspectFamily, NamesFamilyAndRopeScaling) {
  const std::string llama = inspect("llama3");
  EXPECT_TRUE(has(llama, "family        Llama 3.x")) << llama;
  EXPECT_TRUE(has(llama, "rope scaling  none, factor table rope_freqs")) << llama;
  EXPECT_TRUE(has(llama, "ignored       none (every tensor is bound)")) << llama;
  const std::string qwen = inspect("qwen2.5-yarn");
  EXPECT_TRUE(has(qwen, "family        Qwen 2 / 2.5")) << qwen;
  EXPECT_TRUE(has(qwen, "rope scaling  yarn, factor 4, original context 2048, magnitude 1.13"))
      << qwen;
  EXPECT_TRUE(has(qwen, "2048 tokens (trained), 8192 with YaRN")) << qwen;
  const std::string phi = inspect("phi3");
  EXPECT_TRUE(has(phi, "family        Phi-3")) << phi;
  EXPECT_TRUE(has(phi, "rope scaling  longrope")) << phi;
  EXPECT_TRUE(has(inspect("deepseek-r1-qwen"), "family        DeepSeek-R1-Distill-Qwen"));
  EXPECT_TRUE(has(inspect("qwen3"), "family        Qwen 3"));
  EXPECT_TRUE(has(inspect("mistral"), "family        Mistral (v0.3 vocabulary)") ||
              has(inspect("mistral"), "family        Llama 2 / Mistral (SentencePiece)"));
}

TEST(InspectFamily, JsonCarriesTheEffectiveFrequencies) {
  const auto j = nlohmann::json::parse(inspect("phi3", true));
  EXPECT_EQ(j["family"], "Phi-3");
  EXPECT_EQ(j["rope"]["scaling"], "longrope");
  EXPECT_EQ(j["rope"]["factor_table"], "long");  // at the trained context 8192 > original 256
  EXPECT_EQ(j["rope"]["freqs"].size(), 48u);
  EXPECT_TRUE(j["ignored_tensors"].empty());
}

}  // namespace
}  // namespace fasa
