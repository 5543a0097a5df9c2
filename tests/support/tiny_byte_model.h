// The tiny generation model several engine tests share: byte tokenizer, Q8_0 weights, and
// optionally gemma3's hybrid attention; plus prompts that never hold token 0 (its EOS).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"

namespace fasa::test {

// Writes ::testing::TempDir()/name and loads it: a 3-layer llama, or with `hybrid` a 4-layer
// gemma3 with sliding-window layers (window 5, every second layer global; rings of window +
// prefill chunk - 1 rows). `seed`: the weights.
std::shared_ptr<const Model> tiny_byte_model(const std::string& name, bool hybrid,
                                             uint32_t seed = 1);

// n token ids drawn uniformly from [1, n_vocab) by a seeded generator (never token 0, EOS).
std::vector<int32_t> random_prompt(int n, int n_vocab, uint32_t seed);

// A session on the tiny models: `policy`, n_ctx tokens, prefill chunks of 16 rows, `kv`.
SessionOptions tiny_session(const std::string& policy, int n_ctx, KvType kv = KvType::F16);

// Greedy decoding of n tokens that goes on past EOS (a tiny model's text is arbitrary).
GenerateOptions greedy_options(int n);

}  // namespace fasa::test
