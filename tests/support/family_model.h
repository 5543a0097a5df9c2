// Random-weight GGUF files of the paper's model families (docs/MODELS.md "Random-weight family
// files"), for the tests: the metadata keys, tensor names and types llama.cpp's converter writes for the real
// model (real head_dim, GQA ratio, RoPE base and scaling), with 2 layers, small widths, a small
// vocabulary and a low trained/original context. Weights are small integers times a power of
// two (exact in F16) from splitmix64 seeded by (seed, tensor name). The same bytes as
// scripts/dev/make_family_models.py writes (tests/model/family_golden_test.cpp checks sha256).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fasa {

// "llama3", "llama3.2", "mistral", "qwen2.5-yarn", "deepseek-r1-qwen", "qwen3", "phi3".
std::vector<std::string> family_names();

// Writes the family's file to `path`. Throws fasa::Error for an unknown family or I/O failure.
void write_family_model(const std::string& family, uint64_t seed, const std::string& path);

// The real model's `tokenizer.chat_template` string, verbatim from
// tests/data/tokenizer/families/templates/ (the files the chat-format tests render too).
std::string family_chat_template(const std::string& family);

}  // namespace fasa
