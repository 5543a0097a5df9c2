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

}  // namespace fasa::test
