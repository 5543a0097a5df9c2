// Pre-tokenizer word splits, written out by hand from the regexes (llama.cpp's ids for the same
// pre-tokenizers are checked in pre_variants_test.cpp).
#include <gtest/gtest.h>

#include <random>

#include "fasa/core/error.h"
#include "fasa/tokenizer/pretokenize.h"

namespace fasa {
namespace {

using Words = std::vector<std::string>;

Words split(const char* pre, std::string_view text) {
  Words out;
  for (std::string_view w : pre_tokenize(pre_tokenizer_for(pre).kind, text)) out.emplace_back(w);
  return out;
}

TEST(TokenizerPreTokenize, SmolLM2DigitsThenGpt2) {
  EXPECT_EQ(split("smollm", ""), Words{});
  EXPECT_EQ(split("smollm", "Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(split("smollm", "1234"), (Words{"1", "2", "3", "4"}));
  EXPECT_EQ(split("smollm", "abc123def"), (Words{"abc", "1", "2", "3", "def"}));
  // The digit split runs first, so " 12" leaves the space on its own.
  EXPECT_EQ(split("smollm", "x 12"), (Words{"x", " ", "1", "2"}));
  EXPECT_EQ(split("smollm", "don't WE'RE"), (Words{"don", "'t", " WE", "'", "RE"}));
  EXPECT_EQ(split("smollm", "a  b"), (Words{"a", " ", " b"}));
  EXPECT_EQ(split("smollm", "a   "), (Words{"a", "   "}));
  EXPECT_EQ(split("smollm", "x\n\ny"), (Words{"x", "\n", "\n", "y"}));  // only ' ' joins a word
  EXPECT_EQ(split("smollm", "x\n\n"), (Words{"x", "\n\n"}));
  EXPECT_EQ(split("smollm", "hi!!! ok"), (Words{"hi", "!!!", " ok"}));
  EXPECT_EQ(split("smollm", "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87"),
            (Words{"caf\xc3\xa9", " \xe4\xb8\xad\xe6\x96\x87"}));
  // ½ and ² are \p{N} too.
  EXPECT_EQ(split("smollm", "\xc2\xbd\xc2\xb2"), (Words{"\xc2\xbd", "\xc2\xb2"}));
}

TEST(TokenizerPreTokenize, Gpt2KeepsDigitRuns) {
  EXPECT_EQ(split("gpt2", "x 1234"), (Words{"x", " 1234"}));
  EXPECT_EQ(split("gpt-2", "it's"), (Words{"it", "'s"}));
}

TEST(TokenizerPreTokenize, Llama3) {
  EXPECT_EQ(split("llama-bpe", "1234567"), (Words{"123", "456", "7"}));
  EXPECT_EQ(split("llama-bpe", "DON'T"), (Words{"DON", "'T"}));
  EXPECT_EQ(split("llama-bpe", "(hello"), (Words{"(hello"}));
  EXPECT_EQ(split("llama-bpe", "x\n\n y"), (Words{"x", "\n\n", " y"}));
  EXPECT_EQ(split("llama-bpe", "a ...\n\nb"), (Words{"a", " ...\n\n", "b"}));
  EXPECT_EQ(split("llama3", "x   y"), (Words{"x", "  ", " y"}));
  EXPECT_TRUE(pre_tokenizer_for("llama-bpe").ignore_merges);
  EXPECT_TRUE(pre_tokenizer_for("llama3").default_add_bos);
}

TEST(TokenizerPreTokenize, Qwen2SingleDigits) {
  EXPECT_EQ(split("qwen2", "1234"), (Words{"1", "2", "3", "4"}));
  EXPECT_EQ(split("qwen2", "x 12"), (Words{"x", " ", "1", "2"}));
  EXPECT_EQ(split("qwen2", "You're"), (Words{"You", "'re"}));
}

TEST(TokenizerPreTokenize, Default) {
  EXPECT_EQ(split("default", "hello, world!!"), (Words{"hello", ",", " world", "!!"}));
  EXPECT_EQ(split("default", "12345"), (Words{"123", "45"}));
  EXPECT_EQ(split("default", "a+b=c"), (Words{"a", "+", "b", "=", "c"}));
  EXPECT_EQ(split("", "a`b"), (Words{"a", "`", "b"}));  // missing key: "default"
}

TEST(TokenizerPreTokenize, WordsCoverTheTextExactly) {
  std::mt19937 rng(7);
  const std::vector<std::string> alphabet = {" ",
                                             "\n",
                                             "\r",
                                             "\t",
                                             "'",
                                             "s",
                                             "A",
                                             "z",
                                             "0",
                                             "9",
                                             ".",
                                             "!",
                                             "$",
                                             "`",
                                             "\xc2\xa0",
                                             "\xe3\x80\x80",
                                             "\xc3\xa9",
                                             "\xe4\xb8\xad",
                                             "\xf0\x9f\x98\x80",
                                             "\xcc\x81",
                                             "\xd9\xa3",
                                             "\xff",
                                             "\xc3",
                                             "\x80"};  // the last three are ill-formed on purpose
  for (const char* pre : {"smollm", "gpt2", "llama-bpe", "qwen2", "default"}) {
    for (int rep = 0; rep < 200; ++rep) {
      std::string text;
      const int n = static_cast<int>(rng() % 30);
      for (int i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
      std::string joined;
      for (const std::string& w : split(pre, text)) {
        EXPECT_FALSE(w.empty());
        joined += w;
      }
      EXPECT_EQ(joined, text) << pre;
    }
  }
}

TEST(TokenizerPreTokenize, UnknownNameIsAnError) {
  try {
    pre_tokenizer_for("tekken-9000");
    FAIL() << "expected fasa::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.pre = 'tekken-9000'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fasa
