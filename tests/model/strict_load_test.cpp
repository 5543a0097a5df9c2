// The strict loader: a tensor no architecture binds, or a metadata key the engine does not
// understand, refuses the file by name instead of being silently skipped (issue 20: a Llama 3
// file's rope_freqs.weight used to be ignored).
#include <gtest/gtest.h>

#include <limits>

#include "fasa/core/error.h"
#include "fasa/model/model.h"
#include "support/expect_error.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

std::string write(const std::string& name, const test::TinySpec& s) {
  const std::string path = (test::fresh_dir("strict_load_" + name) / name).string();
  test::write_tiny_model(path, s);
  return path;
}

std::string load_error(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StrictLoad, CleanFileLoadsWithNothingIgnored) {
  const auto m = Model::load(write("clean.gguf", {}));
  EXPECT_TRUE(m->ignored_tensors().empty());
}

TEST(StrictLoad, ExtraTensorIsRefusedByName) {
  test::TinySpec s;
  s.extra_tensor = "blk.0.attn_rot_embd.weight";
  const std::string err = load_error(write("extra_tensor.gguf", s));
  EXPECT_NE(err.find("tensor 'blk.0.attn_rot_embd.weight' not used by architecture 'llama'"),
            std::string::npos)
      << err;
}

TEST(StrictLoad, BiasOnAModelWithoutBiasesIsRefused) {
  // qwen2's biases written into a llama file: a real block the llama math would skip.
  test::TinySpec s;
  s.extra_tensor = "blk.1.attn_q.bias";
  EXPECT_NE(load_error(write("extra_bias.gguf", s)).find("'blk.1.attn_q.bias'"), std::string::npos);
}

TEST(StrictLoad, UnknownMathKeyIsRefusedByName) {
  test::TinySpec s;
  s.extra_key = "attention.temperature_tuning";
  const std::string err = load_error(write("extra_key.gguf", s));
  EXPECT_NE(err.find("metadata 'llama.attention.temperature_tuning' not understood"),
            std::string::npos)
      << err;
}

TEST(StrictLoad, KnownKeysAtUnsupportedValuesAreRefused) {
  test::TinySpec s;
  s.extra_key = "expert_count";  // = 1: a mixture of experts
  EXPECT_NE(load_error(write("experts.gguf", s)).find("mixture-of-experts"), std::string::npos);
  s.extra_key = "rope.scaling.yarn_beta_fast";  // = 1, not 32
  s.rope_scaling = "yarn";
  s.rope_factor = 4.0f;
  EXPECT_NE(load_error(write("beta.gguf", s))
                .find("'llama.rope.scaling.yarn_beta_fast' = 1 is "
                      "not supported"),
            std::string::npos);
}

// A float that is not finite never reaches the model: inf passed "> 1" before.
TEST(StrictLoad, NonFiniteAndOutOfRangeFloatsAreRefusedByKey) {
  for (const float base :
       {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 1e30f}) {
    test::TinySpec s;
    s.rope_base = base;
    const std::string err = load_error(write("rope_base.gguf", s));
    EXPECT_NE(err.find("freq_base"), std::string::npos) << base << ": " << err;
  }
}

TEST(StrictLoad, BadRopeFactorTablesAreRefused) {
  test::TinySpec s;
  s.extra_tensor = "rope_freqs.weight";  // [8] = head_dim 16 / 2 pairs
  s.extra_value = -1.0f;
  EXPECT_NE(load_error(write("negative_factors.gguf", s))
                .find("'rope_freqs.weight' element 0 = -1 must be a positive finite factor"),
            std::string::npos);
  s.extra_tensor = "rope_factors_long.weight";  // LongRoPE needs both tables
  s.extra_value = 2.0f;
  EXPECT_NE(load_error(write("long_only.gguf", s)).find("must come together"), std::string::npos);
}

TEST(StrictLoad, YarnWithoutItsFactorIsRefused) {
  test::TinySpec s;
  s.rope_scaling = "yarn";
  EXPECT_NE(load_error(write("yarn_no_factor.gguf", s))
                .find(
                    "'llama.rope.scaling.type' is yarn but 'llama.rope.scaling.factor' is missing"),
            std::string::npos);
}

TEST(StrictLoad, KeysOfOtherPrefixesAreNotTheArchitecturesBusiness) {
  // general.* and tokenizer.* are read where they matter; quantize.* carries no math.
  test::TinySpec s;
  s.extra_key = "rope.scaling.finetuned";  // informational
  EXPECT_EQ(load_error(write("finetuned.gguf", s)), "");
}

}  // namespace
}  // namespace fasa
