// SentencePiece-style tokenizer (tokenizer.ggml.model = "llama": Llama 1/2, Gemma, ...), built
// from the vocabulary as plain data so tests can make one without a GGUF file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

struct SpmConfig {
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens
  std::vector<float> scores;         // tokenizer.ggml.scores, one per token (merge priority)
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (empty: all Normal)
  int64_t bos_id = -1;               // tokenizer.ggml.bos_token_id
  int64_t eos_id = -1;               // tokenizer.ggml.eos_token_id
  int64_t unk_id = -1;               // tokenizer.ggml.unknown_token_id
  int64_t pad_id = -1;               // tokenizer.ggml.padding_token_id
  int64_t eot_id = -1;               // tokenizer.ggml.eot_token_id
  int64_t eom_id = -1;               // tokenizer.ggml.eom_token_id
  bool add_bos = true;               // tokenizer.ggml.add_bos_token
  bool add_space_prefix = true;      // tokenizer.ggml.add_space_prefix
  std::string model_name;            // general.name (Phi-3 special-token stripping)
};

// Validates `cfg` (throws fasa::Error naming the key and the problem) and builds the tokenizer.
// tokenizer.ggml.add_eos_token is not supported: encode never appends EOS.
std::unique_ptr<Tokenizer> make_spm_tokenizer(SpmConfig cfg);

class GgufFile;
// Reads the tokenizer.ggml.* keys (tokenizer.ggml.model must be "llama"); throws fasa::Error
// naming a missing, mistyped or mis-sized key. Absent special ids take llama.cpp's defaults for
// this model type (BOS 1, EOS 2, UNK 0) where the vocabulary has them.
SpmConfig read_spm_config(const GgufFile& file);

}  // namespace fasa
