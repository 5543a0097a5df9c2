// What the byte-level BPE and the SentencePiece-style tokenizer share about special tokens:
// cutting their texts out of a prompt before the model's own algorithm runs, the texts that end
// a generation, and quoting vocabulary strings in error messages.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

// A piece of a prompt: one special token, or a span of text the tokenizer still has to encode.
struct TextFragment {
  int32_t token;  // >= 0: a special token; -1: text [begin, end)
  size_t begin, end;
};

// Cuts special-token texts out of a text as llama.cpp does: the Control, UserDefined and Unknown
// tokens, longest text first (ties by id), each splitting every remaining text fragment at all of
// its occurrences. Without parse_special only user-defined tokens are cut out (as llama.cpp and
// Hugging Face do). A token with `rstrip` also drops the ASCII whitespace (C isspace) that follows
// each occurrence it cuts out, as llama.cpp's LLAMA_TOKEN_ATTR_RSTRIP does.
//
// Rules for one split: parse_special for the text at large; in the `literal` byte ranges
// (ascending, disjoint) only user-defined tokens are cut, and never one whose text is in
// `markers`. An occurrence that overlaps a literal range follows the literal rule.
struct SplitRule {
  bool parse_special = false;
  const std::vector<TextRange>* literal = nullptr;  // null: none
  const std::vector<std::string>* markers = nullptr;
};

class SpecialTokenSplitter {
 public:
  SpecialTokenSplitter() = default;
  // `texts` and `types` are the whole vocabulary (equal sizes). `model_name` is general.name:
  // llama.cpp gives every special token of a model named like Phi-3 the rstrip attribute
  // (phi3_strips_specials).
  SpecialTokenSplitter(const std::vector<std::string>& texts, const std::vector<TokenType>& types,
                       const std::string& model_name = "");

  std::vector<TextFragment> split(std::string_view text, bool parse_special) const {
    return split(text, SplitRule{parse_special});
  }
  std::vector<TextFragment> split(std::string_view text, const SplitRule& rule) const;

 private:
  struct Special {
    int32_t id;
    std::string text;
    bool user_defined;
    bool rstrip;
  };
  std::vector<Special> specials_;
};

// The steps both tokenizers' encode share: refuses text that is not valid UTF-8 (fasa::Error
// naming the byte offset), starts the output with `bos` when it is >= 0, then cuts the special
// tokens out of the text by `rule`. A special token goes to the output as it is; each text
// fragment goes to encode_text(fragment, after_special, out), after_special being true when the
// fragment starts the text or follows a special token.
using FragmentEncoder =
    std::function<void(std::string_view fragment, bool after_special, std::vector<int32_t>& out)>;
std::vector<int32_t> encode_fragments(std::string_view text, int32_t bos,
                                      const SpecialTokenSplitter& specials, const SplitRule& rule,
                                      const FragmentEncoder& encode_text);

// True when llama.cpp strips the whitespace after the model's special tokens: general.name,
// lower-cased, contains "phi-3" or "phi3" (then every special token but <unk>, <s> and
// <|endoftext|> strips, and </s> too). A Phi-3 file whose name lacks those (e.g. one converted as
// "Phi 3.5 Mini Instruct") does not strip, in llama.cpp and here.
bool phi3_strips_specials(const std::string& model_name);

// True for the texts llama.cpp treats as end of generation whatever the token ids in the metadata
// say (end-of-turn, end-of-text, FIM pad/repo/file-separator tokens, ...); llama.cpp also makes
// such tokens Control.
bool is_eog_text(std::string_view text);

// True for the texts llama.cpp makes Control whatever their token type says: the end-of-generation
// texts above and its fill-in-the-middle prefix/suffix/middle tokens ("<|fim_prefix|>", ...; Qwen's
// are user-defined in some conversions). A Control token is cut out of a prompt only with
// parse_special and decodes to nothing without show_special.
bool is_forced_control_text(std::string_view text);

// A vocabulary string for an error message: quoted, control bytes escaped, at most 64 bytes.
std::string quoted_token(std::string_view s);

}  // namespace fasa
