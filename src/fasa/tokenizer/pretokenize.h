// Pre-tokenizers of byte-level BPE vocabularies (tokenizer.ggml.pre): split text into words
// before merges run. Each reproduces llama.cpp's splitting for its pre-type, including
// llama.cpp's hand-written versions of the GPT-2 and Llama 3 regexes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fasa {

enum class PreTokenizerKind {
  Default,    // "default": [\p{P}$+<=>^~|]+, then GPT-2, then \p{N}+, then [0-9]{3}
  Gpt2,       // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
  Starcoder,  // \p{N} (every digit alone), then GPT-2 (starcoder, smollm, refact, ...)
  Llama3,     // Llama 3 regex: \p{N}{1,3}, case-insensitive contractions, [\r\n] handling
  Qwen2,      // as Llama 3 but \p{N} one digit at a time
};

struct PreTokenizerInfo {
  PreTokenizerKind kind = PreTokenizerKind::Default;
  bool ignore_merges = false;    // a word that is itself a token is emitted whole (Llama 3)
  bool default_add_bos = false;  // when tokenizer.ggml.add_bos_token is absent
};

// Maps a tokenizer.ggml.pre value to its pre-tokenizer; "" (key absent) means "default".
// Throws fasa::Error naming the value when it is not supported.
PreTokenizerInfo pre_tokenizer_for(const std::string& pre_name);

// Splits `text` into words: byte ranges that cover it in order. Ill-formed UTF-8 bytes are
// kept (each one counts as U+FFFD) so the words always cover every byte.
std::vector<std::string_view> pre_tokenize(PreTokenizerKind kind, std::string_view text);

}  // namespace fasa
