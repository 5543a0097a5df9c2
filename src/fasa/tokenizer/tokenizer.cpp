// Tokenizer construction from GGUF metadata and the shared decode helper.
#include "fasa/tokenizer/tokenizer.h"

#include <cstdint>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/bpe.h"
#include "fasa/tokenizer/spm.h"

namespace fasa {

namespace {

int64_t optional_id(const GgufFile& file, const char* key) { return file.get_int_or(key, -1); }

std::string require_model(const GgufFile& file, const char* want) {
  if (!file.find("tokenizer.ggml.model")) fail("missing tokenizer.ggml.model");
  std::string model = file.get_string("tokenizer.ggml.model");
  if (model != want) {
    fail("tokenizer.ggml.model = '{}', expected '{}'", model, want);
  }
  return model;
}

std::vector<std::string> read_tokens(const GgufFile& file) {
  if (!file.find("tokenizer.ggml.tokens")) fail("missing tokenizer.ggml.tokens");
  return file.get_string_array("tokenizer.ggml.tokens");
}

std::vector<int32_t> read_token_types(const GgufFile& file) {
  std::vector<int32_t> out;
  if (!file.find("tokenizer.ggml.token_type")) return out;
  const std::vector<int64_t> types = file.get_int_array("tokenizer.ggml.token_type");
  out.reserve(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] < INT32_MIN || types[i] > INT32_MAX) {
      fail("tokenizer.ggml.token_type[{}] = {} is not a token type (0..6)", i, types[i]);
    }
    out.push_back(static_cast<int32_t>(types[i]));
  }
  return out;
}

}  // namespace

BpeConfig read_bpe_config(const GgufFile& file) {
  require_model(file, "gpt2");
  BpeConfig cfg;
  cfg.pre = file.get_string_or("tokenizer.ggml.pre", "");
  cfg.model_name = file.get_string_or("general.name", "");
  cfg.tokens = read_tokens(file);
  cfg.token_types = read_token_types(file);
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

SpmConfig read_spm_config(const GgufFile& file) {
  require_model(file, "llama");
  SpmConfig cfg;
  cfg.tokens = read_tokens(file);
  cfg.token_types = read_token_types(file);
  if (!file.find("tokenizer.ggml.scores")) {
    fail("missing tokenizer.ggml.scores (required for tokenizer.ggml.model = 'llama')");
  }
  cfg.scores = file.get_float_array("tokenizer.ggml.scores");
  cfg.model_name = file.get_string_or("general.name", "");
  const auto n = static_cast<int64_t>(cfg.tokens.size());
  // llama.cpp's defaults for this model type, used when the key is absent.
  auto id_or = [&](const char* key, int64_t def) {
    return file.find(key) ? file.get_int(key) : (def < n ? def : -1);
  };
  cfg.bos_id = id_or("tokenizer.ggml.bos_token_id", 1);
  cfg.eos_id = id_or("tokenizer.ggml.eos_token_id", 2);
  cfg.unk_id = id_or("tokenizer.ggml.unknown_token_id", 0);
  cfg.pad_id = optional_id(file, "tokenizer.ggml.padding_token_id");
  cfg.eot_id = optional_id(file, "tokenizer.ggml.eot_token_id");
  cfg.eom_id = optional_id(file, "tokenizer.ggml.eom_token_id");
  cfg.add_bos = file.get_bool_or("tokenizer.ggml.add_bos_token", true);
  cfg.add_space_prefix = file.get_bool_or("tokenizer.ggml.add_space_prefix", true);
  return cfg;
}

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) {
  try {
    if (!file.find("tokenizer.ggml.model")) fail("missing tokenizer.ggml.model");
    const std::string model = file.get_string("tokenizer.ggml.model");
    if (model == "gpt2") return make_bpe_tokenizer(read_bpe_config(file));
    if (model == "llama") return make_spm_tokenizer(read_spm_config(file));
    fail("unsupported tokenizer.ggml.model = '{}' (supported: gpt2, llama)", model);
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
