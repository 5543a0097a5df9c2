// Tokenizer built from GGUF metadata (tokenizer.ggml.*): byte-level BPE (`gpt2`, bpe.h) or
// SentencePiece-style (`llama`, spm.h) behind the same class.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fasa {

class GgufFile;

enum class TokenType : int32_t {  // tokenizer.ggml.token_type values
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// A byte range [begin, end) of a text.
struct TextRange {
  size_t begin, end;
};

class Tokenizer {
 public:
  // Throws fasa::Error naming the key when the metadata is missing, inconsistent or unsupported
  // (unknown tokenizer.ggml.model or tokenizer.ggml.pre).
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);
  virtual ~Tokenizer() = default;

  // Text -> ids. `add_bos`: prepend BOS when the model asks for it (tokenizer.ggml.add_bos_token).
  // `parse_special`: text of control/user-defined tokens (e.g. "<|im_start|>") becomes that token.
  // Throws fasa::Error when `text` is not valid UTF-8 (naming the byte offset).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos,
                                      bool parse_special) const = 0;
  // A chat prompt: special-token texts are parsed everywhere except in the `literal` ranges
  // (the messages' contents; ascending, disjoint), where they stay text as with
  // parse_special = false, and where the `markers` (the chat format's turn delimiters) are never
  // cut out even when the vocabulary makes them user-defined tokens. So a message that contains
  // "<|im_end|>" cannot end its turn. A special-token text that only partly lies in a literal
  // range counts as inside it. Throws as encode does.
  virtual std::vector<int32_t> encode_with_literals(
      std::string_view text, bool add_bos, const std::vector<TextRange>& literal,
      const std::vector<std::string>& markers) const = 0;

  // The raw bytes a token stands for (byte-level or "▁"/<0xXX> decoded); control tokens give
  // their text only when `show_special`.
  virtual std::string token_to_bytes(int32_t id, bool show_special = false) const = 0;
  // The token's vocabulary string as stored (e.g. "Ġthe").
  virtual const std::string& token_text(int32_t id) const = 0;
  virtual TokenType token_type(int32_t id) const = 0;

  // The tokens' bytes, concatenated; a SentencePiece vocabulary with add_space_prefix also
  // drops the leading space encode added.
  virtual std::string decode(const std::vector<int32_t>& ids, bool show_special = false) const;

  virtual int32_t n_vocab() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when none
  virtual int32_t eos_id() const = 0;  // -1 when none
  virtual bool adds_bos() const = 0;   // tokenizer.ggml.add_bos_token
  // End of generation: EOS, EOT or any token the model's chat format ends a turn with.
  virtual bool is_eog(int32_t id) const = 0;
  // Looks up an exact vocabulary string; -1 when absent.
  virtual int32_t find_token(std::string_view text) const = 0;
};

// Streams detokenized text without ever emitting a broken UTF-8 sequence: bytes of an
// incomplete character are held back until the character is complete.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool show_special = false)
      : tok_(tok), show_special_(show_special) {}
  std::string push(int32_t id);  // complete characters ready to print (maybe empty)
  std::string flush();           // whatever is left (invalid trailing bytes as U+FFFD)

 private:
  const Tokenizer& tok_;
  bool show_special_;
  std::string pending_;
};

// Returns the byte offset of the first invalid UTF-8 sequence, or -1 when `s` is valid.
int64_t find_invalid_utf8(std::string_view s);

}  // namespace fasa
