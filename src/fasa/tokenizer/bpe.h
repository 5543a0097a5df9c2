// Byte-level BPE (tokenizer.ggml.model = "gpt2"), built from the vocabulary as plain data so
// tests can make one without a GGUF file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

struct BpeConfig {
  std::string pre = "default";       // tokenizer.ggml.pre
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (empty: all Normal)
  std::vector<std::string> merges;   // tokenizer.ggml.merges, "left right", by rank
  int64_t bos_id = -1;               // tokenizer.ggml.bos_token_id
  int64_t eos_id = -1;               // tokenizer.ggml.eos_token_id
  int64_t eot_id = -1;               // tokenizer.ggml.eot_token_id
  int64_t eom_id = -1;               // tokenizer.ggml.eom_token_id
  int add_bos = -1;                  // tokenizer.ggml.add_bos_token; -1: per pre-tokenizer
  std::string model_name;            // general.name (Phi-3 special-token stripping)
};

// Validates `cfg` (throws fasa::Error naming the key and the problem) and builds the tokenizer.
std::unique_ptr<Tokenizer> make_bpe_tokenizer(BpeConfig cfg);

class GgufFile;
// Reads the tokenizer.ggml.* keys (tokenizer.ggml.model must be "gpt2"); throws fasa::Error
// naming a missing or mistyped key.
BpeConfig read_bpe_config(const GgufFile& file);

}  // namespace fasa
