#include "support/tiny_byte_model.h"

#include <gtest/gtest.h>

#include <random>

#include "support/tiny_model.h"

namespace fasa::test {

std::shared_ptr<const Model> tiny_byte_model(const std::string& name, bool hybrid, uint32_t seed) {
  TinySpec s;
  s.byte_tokenizer = true;
  s.wtype = DType::Q8_0;
  s.n_layers = hybrid ? 4 : 3;
  s.seed = seed;
  if (hybrid) {
    s.arch = "gemma3";
    s.sliding_window = 5;
    s.window_pattern = 2;
    s.rope_base_local = 100.0f;
  }
  const std::string path = ::testing::TempDir() + "/" + name;
  write_tiny_model(path, s);
  return Model::load(path);
}

std::vector<int32_t> random_prompt(int n, int n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(1 + rng() % (n_vocab - 1));
  return t;
}

SessionOptions tiny_session(const std::string& policy, int n_ctx, KvType kv) {
  SessionOptions so;
  so.n_ctx = n_ctx;
  so.prefill_chunk = 16;
  so.policy = policy;
  so.kv_type = kv;
  return so;
}

GenerateOptions greedy_options(int n) {
  GenerateOptions go;
  go.n_predict = n;
  go.sampler.temp = 0.0f;
  go.stop_at_eog = false;
  return go;
}

}  // namespace fasa::test
