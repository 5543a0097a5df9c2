// Session refuses up front a KV cache the machine cannot hold (core/memory.h), rather than be
// killed halfway through filling it; FASA-M needs only its RAM part.
#include <gtest/gtest.h>

#include <string>

#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/expect_error.h"
#include "support/scoped_env.h"
#include "support/tiny_calibration.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

std::shared_ptr<const Model> tiny() {
  const std::string path = ::testing::TempDir() + "/session_memory.gguf";
  test::TinySpec spec;
  spec.n_layers = 3;
  test::write_tiny_model(path, spec);
  return Model::load(path);
}

TEST(SessionMemory, ACacheLargerThanTheAvailableMemoryIsRefused) {
  const auto model = tiny();
  SessionOptions so;
  so.n_ctx = 256;
  so.policy = "full";
  // 3 layers x 2 kv heads x (K, V) x 16 dims x 2 bytes = 384 bytes a token.
  const uint64_t need = 256ull * 384;
  {
    test::ScopedEnv env("FASA_MEMORY_AVAILABLE", std::to_string(need).c_str());
    Session s(model, so);
    EXPECT_EQ(s.cache().ram_bytes_full(), need);
  }
  {
    test::ScopedEnv env("FASA_MEMORY_AVAILABLE", std::to_string(need - 1).c_str());
    test::expect_error([&] { Session s(model, so); },
                       "policy 'full': the KV cache needs 0.0 GB of RAM at 256 tokens (f16) but "
                       "0.0 GB is available (FASA_MEMORY_AVAILABLE)");
    test::ScopedEnv off("FASA_MEMORY_CHECK", "off");
    Session s(model, so);
    EXPECT_EQ(s.n_ctx(), 256);
  }
}

TEST(SessionMemory, FasaMNeedsOnlyItsRamPart) {
  const auto model = tiny();
  const std::string calib = test::calibrate_tiny(model, "session_memory_calib.json");
  SessionOptions so;
  so.n_ctx = 256;
  so.policy =
      "fasa:calib=" + calib + ",budget=8,row_cache=4,variant=m,offload_dir=" + ::testing::TempDir();
  uint64_t need = 0;
  {
    test::ScopedEnv off("FASA_MEMORY_CHECK", "off");
    Session s(model, so);
    need = s.cache().ram_bytes_full();
    // Less than the whole cache (256 x 384 bytes), more than the dense layer 0 alone.
    EXPECT_LT(need, 256ull * 384);
    EXPECT_GT(need, 256ull * 128);
    // Filled almost to capacity, it holds no more than that.
    std::vector<int32_t> prompt(200, 5);
    s.prefill(prompt);
    for (int i = 0; i < 40; ++i) s.decode(7);
    EXPECT_LE(s.cache().ram_bytes(), need);
  }
  test::ScopedEnv env("FASA_MEMORY_AVAILABLE", std::to_string(need).c_str());
  Session m(model, so);
  EXPECT_TRUE(m.cache().tiered());
  so.policy = "full";
  test::expect_error([&] { Session s(model, so); }, "the KV cache needs");
}

}  // namespace
}  // namespace fasa
