// Tokenizer construction from GGUF metadata and the shared decode helper.
#include "fasa/tokenizer/tokenizer.h"

#include <cstdint>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/bpe.h"

namespace fasa {

namespace {

int64_t optional_id(const GgufFile& file, const char* key) {
  return file.get_int_or(key, -1);
}

}  // namespace

BpeConfig read_bpe_config(const GgufFile& file) {
  if (!file.find("tokenizer.ggml.model")) fail("missing tokenizer.ggml.model");
  const std::string model = file.get_string("tokenizer.ggml.model");
  if (model != "gpt2") fail("unsupported tokenizer.ggml.model = '{}' (supported: gpt2)", model);
  BpeConfig cfg;
  cfg.pre = file.get_string_or("tokenizer.ggml.pre", "");
  if (!file.find("tokenizer.ggml.tokens")) fail("missing tokenizer.ggml.tokens");
  cfg.tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (file.find("tokenizer.ggml.token_type")) {
    const std::vector<int64_t> types = file.get_int_array("tokenizer.ggml.token_type");
    cfg.token_types.reserve(types.size());
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] < INT32_MIN || types[i] > INT32_MAX) {
        fail("tokenizer.ggml.token_type[{}] = {} is not a token type (0..6)", i, types[i]);
      }
      cfg.token_types.push_back(static_cast<int32_t>(types[i]));
    }
  }
  if (!file.find("tokenizer.ggml.merges")) fail("missing tokenizer.ggml.merges");
  cfg.merges = file.get_string_array("tokenizer.ggml.merges");
  cfg.bos_id = optional_id(file, "tokenizer.ggml.bos_token_id");
  cfg.eos_id = optional_id(file, "tokenizer.ggml.eos_token_id");
  cfg.eot_id = optional_id(file, "tokenizer.ggml.eot_token_id");
  cfg.eom_id = optional_id(file, "tokenizer.ggml.eom_token_id");
  if (file.find("tokenizer.ggml.add_bos_token")) {
    cfg.add_bos = file.get_bool_or("tokenizer.ggml.add_bos_token", false) ? 1 : 0;
  }
  return cfg;
}

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) {
  try {
    return make_bpe_tokenizer(read_bpe_config(file));
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(file.path(), 0) == 0) throw;  // the GGUF reader named the file already
    throw Error(fmt::format("{}: {}", file.path(), msg));
  }
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool show_special) const {
  std::string out;
  for (const int32_t id : ids) out += token_to_bytes(id, show_special);
  return out;
}

}  // namespace fasa
