// Every supported pre-tokenizer on SmolLM2's vocabulary and merges, against llama.cpp's ids for
// fixed and random strings (tests/data/tokenizer/smollm2_pre_variants.jsonl, written by
// scripts/dev/make_tokenizer_goldens.py with tokenizer.ggml.pre replaced in a vocab-only copy).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "fasa/io/gguf.h"
#include "fasa/tokenizer/bpe.h"
#include "support/hex_text.h"
#include "support/model_path.h"

namespace fasa {
namespace {

TEST(TokenizerPreVariants, MatchLlamaCpp) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  std::ifstream in(FASA_TEST_DATA_DIR "/tokenizer/smollm2_pre_variants.jsonl");
  ASSERT_TRUE(in.good());
  const auto file = GgufFile::open(path);
  const BpeConfig base = read_bpe_config(*file);
  std::map<std::string, std::unique_ptr<Tokenizer>> toks;
  std::map<std::string, int> n_checked, n_failed;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    const auto pre = j["pre"].get<std::string>();
    auto& tok = toks[pre];
    if (!tok) {
      BpeConfig cfg = base;
      cfg.pre = pre;
      tok = make_bpe_tokenizer(std::move(cfg));
    }
    const auto text = j["text"].get<std::string>();
    const auto want = j["ids"].get<std::vector<int32_t>>();
    const auto got = tok->encode(text, false, j["parse_special"].get<bool>());
    ++n_checked[pre];
    if (got != want) {
      ++n_failed[pre];
      ADD_FAILURE() << "pre=" << pre << " text=\"" << test::escaped(text) << "\" ("
                    << ::testing::PrintToString(got) << " vs llama.cpp "
                    << ::testing::PrintToString(want) << ")";
    }
  }
  for (const char* pre : {"smollm", "gpt-2", "llama-bpe", "qwen2", "default"}) {
    EXPECT_GE(n_checked[pre], 300) << pre;
    EXPECT_EQ(n_failed[pre], 0) << pre;
  }
}

}  // namespace
}  // namespace fasa
