// UTF-8 checking, code point classes, GPT-2's byte alphabet and the streaming decoder.
#include <gtest/gtest.h>

#include <set>

#include "fasa/core/error.h"
#include "fasa/tokenizer/bpe.h"
#include "fasa/tokenizer/tokenizer.h"
#include "fasa/tokenizer/unicode.h"

namespace fasa {
namespace {

TEST(Utf8Check, AcceptsWellFormed) {
  EXPECT_EQ(find_invalid_utf8(""), -1);
  EXPECT_EQ(find_invalid_utf8("plain ASCII text, long enough for the 8-byte fast path"), -1);
  EXPECT_EQ(find_invalid_utf8(std::string_view("\x00\x7f", 2)), -1);
  EXPECT_EQ(find_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), -1);  // é € 😀
  EXPECT_EQ(find_invalid_utf8("\xc2\x80"), -1);          // U+0080, smallest 2-byte
  EXPECT_EQ(find_invalid_utf8("\xe0\xa0\x80"), -1);      // U+0800, smallest 3-byte
  EXPECT_EQ(find_invalid_utf8("\xed\x9f\xbf"), -1);      // U+D7FF, just below the surrogates
  EXPECT_EQ(find_invalid_utf8("\xee\x80\x80"), -1);      // U+E000, just above
  EXPECT_EQ(find_invalid_utf8("\xef\xbf\xbf"), -1);      // U+FFFF
  EXPECT_EQ(find_invalid_utf8("\xf0\x90\x80\x80"), -1);  // U+10000
  EXPECT_EQ(find_invalid_utf8("\xf4\x8f\xbf\xbf"), -1);  // U+10FFFF
}

TEST(Utf8Check, RejectsIllFormedAtTheRightOffset) {
  using std::string_view;
  EXPECT_EQ(find_invalid_utf8(string_view("\x80", 1)), 0);  // lone continuation
  EXPECT_EQ(find_invalid_utf8(string_view("ab\xbf", 3)), 2);
  EXPECT_EQ(find_invalid_utf8(string_view("\xc0\x80", 2)), 0);      // overlong NUL
  EXPECT_EQ(find_invalid_utf8(string_view("x\xc1\xbf", 3)), 1);     // overlong 2-byte
  EXPECT_EQ(find_invalid_utf8(string_view("\xe0\x80\x80", 3)), 0);  // overlong 3-byte
  EXPECT_EQ(find_invalid_utf8(string_view("\xe0\x9f\xbf", 3)), 0);
  EXPECT_EQ(find_invalid_utf8(string_view("\xf0\x80\x80\x80", 4)), 0);  // overlong 4-byte
  EXPECT_EQ(find_invalid_utf8(string_view("\xf0\x8f\xbf\xbf", 4)), 0);
  EXPECT_EQ(find_invalid_utf8(string_view("ok\xed\xa0\x80", 5)), 2);    // surrogate U+D800
  EXPECT_EQ(find_invalid_utf8(string_view("\xed\xbf\xbf", 3)), 0);      // surrogate U+DFFF
  EXPECT_EQ(find_invalid_utf8(string_view("\xf4\x90\x80\x80", 4)), 0);  // U+110000
  EXPECT_EQ(find_invalid_utf8(string_view("\xf5\x80\x80\x80", 4)), 0);  // lead past F4
  EXPECT_EQ(find_invalid_utf8(string_view("\xff", 1)), 0);
  EXPECT_EQ(find_invalid_utf8(string_view("\xfe\xfe", 2)), 0);
  EXPECT_EQ(find_invalid_utf8(string_view("abc\xe2\x82", 5)), 3);  // truncated at the end
  EXPECT_EQ(find_invalid_utf8(string_view("\xe2\x82"
                                          "a",
                                          3)),
            0);  // cut short by ASCII
  EXPECT_EQ(find_invalid_utf8(string_view("\xf0\x9f\x98", 3)), 0);
  EXPECT_EQ(find_invalid_utf8(string_view("\xc3\xa9\xc3", 3)), 2);
  const std::string long_prefix(1000, 'a');
  EXPECT_EQ(find_invalid_utf8(long_prefix + "\xc3\xa9" + "\xc3"), 1002);
}

TEST(Utf8Classes, GeneralCategories) {
  using namespace unicode;
  EXPECT_EQ(flags('a') & kClassMask, kLetter);
  EXPECT_EQ(flags('Z') & kClassMask, kLetter);
  EXPECT_EQ(flags('7') & kClassMask, kNumber);
  EXPECT_EQ(flags(' '), kSeparator | kWhitespace);
  EXPECT_EQ(flags('\n'), kOther | kWhitespace);
  EXPECT_EQ(flags('\'') & kClassMask, kPunctuation);
  EXPECT_EQ(flags('$') & kClassMask, kSymbol);
  EXPECT_EQ(flags('`') & kClassMask, kSymbol);
  EXPECT_EQ(flags(0xE9) & kClassMask, kLetter);     // é
  EXPECT_EQ(flags(0x4E2D) & kClassMask, kLetter);   // 中
  EXPECT_EQ(flags(0x0663) & kClassMask, kNumber);   // Arabic-Indic three
  EXPECT_EQ(flags(0x00BD) & kClassMask, kNumber);   // ½
  EXPECT_EQ(flags(0x2167) & kClassMask, kNumber);   // Roman numeral eight
  EXPECT_EQ(flags(0x1F600) & kClassMask, kSymbol);  // 😀
  EXPECT_EQ(flags(0x0301) & kClassMask, kMark);     // combining acute
  EXPECT_EQ(flags(0x200D) & kClassMask, kOther);    // ZWJ (Cf)
  EXPECT_EQ(flags(0xE000) & kClassMask, kOther);    // private use
  EXPECT_EQ(flags(0x0378), kUndefined);             // unassigned
  EXPECT_EQ(flags(0x2EBF0) & kClassMask, kLetter);  // CJK extension I (Unicode 15.1)
  EXPECT_EQ(flags(0x110000), kUndefined);
  EXPECT_TRUE(flags(0xA0) & kWhitespace);
  EXPECT_TRUE(flags(0x85) & kWhitespace);
  EXPECT_TRUE(flags(0x3000) & kWhitespace);
  EXPECT_TRUE(flags(0x2028) & kWhitespace);
  EXPECT_FALSE(flags(0x200B) & kWhitespace);  // zero width space is not White_Space
  EXPECT_FALSE(flags(0x1C) & kWhitespace);    // nor are the ASCII information separators
}

TEST(Utf8ByteAlphabet, IsABijectionOntoPrintableCodePoints) {
  using namespace unicode;
  std::set<uint32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = byte_to_cp(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(cp).second);
    EXPECT_EQ(cp_to_byte(cp), b);
    EXPECT_FALSE(flags(cp) & kWhitespace) << b;
  }
  EXPECT_EQ(byte_to_cp('A'), uint32_t('A'));
  EXPECT_EQ(byte_to_utf8(' '), "\xc4\xa0");   // Ġ
  EXPECT_EQ(byte_to_utf8('\n'), "\xc4\x8a");  // Ċ
  EXPECT_EQ(byte_to_cp(0xAD), 0x143u);
  EXPECT_EQ(cp_to_byte(0x144), -1);
  EXPECT_EQ(cp_to_byte(0x4E2D), -1);
}

// A vocabulary of the 256 byte characters only: every token is one byte.
std::unique_ptr<Tokenizer> bytes_only_tokenizer() {
  BpeConfig cfg;
  cfg.pre = "gpt2";
  for (int b = 0; b < 256; ++b) {
    cfg.tokens.push_back(unicode::byte_to_utf8(static_cast<uint8_t>(b)));
  }
  return make_bpe_tokenizer(std::move(cfg));
}

TEST(Utf8StreamDecoder, HoldsBackPartialCharacters) {
  const auto tok = bytes_only_tokenizer();
  const std::string text = "a\xe2\x82\xac\xf0\x9f\x98\x80z";  // a € 😀 z
  const std::vector<int32_t> ids = tok->encode(text, false, false);
  ASSERT_EQ(ids.size(), text.size());
  StreamDecoder dec(*tok);
  std::vector<std::string> pieces;
  for (const int32_t id : ids) pieces.push_back(dec.push(id));
  EXPECT_EQ(pieces, (std::vector<std::string>{"a", "", "", "\xe2\x82\xac", "", "", "",
                                              "\xf0\x9f\x98\x80", "z"}));
  EXPECT_EQ(dec.flush(), "");
}

TEST(Utf8StreamDecoder, ReplacesIllFormedBytes) {
  const auto tok = bytes_only_tokenizer();
  // Byte tokens can spell anything, also ill-formed UTF-8.
  const int32_t ff = tok->find_token(unicode::byte_to_utf8(0xFF));
  const int32_t e2 = tok->find_token(unicode::byte_to_utf8(0xE2));
  const int32_t x82 = tok->find_token(unicode::byte_to_utf8(0x82));
  const int32_t a = tok->find_token("a");
  StreamDecoder dec(*tok);
  EXPECT_EQ(dec.push(ff), "\xef\xbf\xbd");  // U+FFFD at once: it can never complete
  EXPECT_EQ(dec.push(e2), "");
  EXPECT_EQ(dec.push(x82), "");
  EXPECT_EQ(dec.push(a),
            "\xef\xbf\xbd"
            "a");  // E2 82 cut short by 'a'
  EXPECT_EQ(dec.push(e2), "");
  EXPECT_EQ(dec.flush(), "\xef\xbf\xbd");  // unfinished at the end
  EXPECT_EQ(dec.flush(), "");
}

TEST(Utf8Prompt, InvalidPromptIsAnError) {
  const auto tok = bytes_only_tokenizer();
  try {
    tok->encode(std::string_view("abc\xc3(", 5), false, false);
    FAIL() << "expected fasa::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "prompt is not valid UTF-8 (byte offset 3)");
  }
  EXPECT_THROW(tok->encode(std::string_view("\xed\xa0\x80", 3), false, true), Error);
}

}  // namespace
}  // namespace fasa
