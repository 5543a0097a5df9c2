#include "support/random_calibration.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <random>

#include "fasa/attention/calibration.h"

namespace fasa::test {

std::string write_random_calibration(const AttnShape& shape, const std::string& sha,
                                     const std::string& name, bool channel_importance) {
  Calibration c;
  c.model_sha256 = sha;
  c.arch = "llama";
  c.n_layers = shape.n_layers;
  c.n_heads = shape.n_heads;
  c.n_kv_heads = shape.n_kv_heads;
  c.head_dim = shape.head_dim;
  c.fcs = fc_dims(RopeLayout::Norm, FcLayout::Rope, shape.head_dim, shape.head_dim);
  for (int l = 0; l < shape.n_layers; ++l) c.layers.push_back(l);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  c.mean_ca.resize(static_cast<size_t>(c.n_layers) * c.n_heads * c.n_fc());
  for (auto& x : c.mean_ca) x = u(rng);
  if (channel_importance) {
    c.channel_importance.resize(c.layers.size() * c.n_heads * c.head_dim);
    for (auto& x : c.channel_importance) x = u(rng);
  }
  c.rank_all();
  const std::string p =
      ::testing::TempDir() + "/" + name + "_" + std::to_string(getpid()) + ".json";
  save_calibration(c, p);
  return p;
}

}  // namespace fasa::test
