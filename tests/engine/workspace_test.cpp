// A session's scratch (core/workspace.h, ForwardScratch::work): the arenas reserved from the
// model and context (forward_workspace_bytes) hold every prefill chunk and decode step, and
// nothing is drawn outside the session's workspace. A tiny K-quant model takes matmul_multi's
// separate-row path (the largest frame: [rows, n_out] floats, one thread so one worker takes a
// whole matrix); Gemma 3 adds sliding-window layers and real weights.
#include <gtest/gtest.h>

#include <vector>

#include "fasa/core/workspace.h"
#include "fasa/engine/session.h"
#include "fasa/model/forward.h"
#include "fasa/model/model.h"
#include "support/model_path.h"
#include "support/threads_guard.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

void expect_reservation_holds(std::shared_ptr<const Model> model) {
  test::ThreadsGuard one(1);
  const int n_vocab = model->config().n_vocab;
  std::vector<int32_t> prompt(300);
  for (int i = 0; i < 300; ++i) prompt[i] = (100 + i * 37) % n_vocab;
  for (const char* policy : {"full", "h2o:budget=64"}) {
    SessionOptions so;
    so.n_ctx = 1024;
    so.prefill_chunk = 256;  // a chunk of 256 rows, then one of 44
    so.policy = policy;
    const uint64_t unbound = unbound_workspace_uses();
    Session s(model, so);
    s.prefill(prompt);
    for (int i = 0; i < 4; ++i) s.decode((200 + i) % n_vocab);
    const Workspace::Stats st = s.workspace_stats();
    const size_t per_arena = forward_workspace_bytes(model->config(), 256, 1024);
    EXPECT_EQ(st.grows, 0u) << policy;
    EXPECT_EQ(st.reserved, per_arena * st.arenas) << policy;
    EXPECT_GT(st.peak, 0u) << policy;
    EXPECT_LE(st.peak, per_arena) << policy;
    EXPECT_EQ(unbound_workspace_uses(), unbound) << policy;
  }
}

TEST(SessionWorkspace, ReservationHoldsAKQuantModelsSteps) {
  const std::string path = ::testing::TempDir() + "/workspace_q4k.gguf";
  test::TinySpec spec;
  spec.d_model = 256;
  spec.d_ff = 1280;  // gate/up rows of a 256-token chunk: 1.25 MiB
  spec.n_ctx = 1024;
  spec.wtype = DType::Q4_K;
  test::write_tiny_model(path, spec);
  expect_reservation_holds(Model::load(path));
}

TEST(SessionWorkspace, ReservationHoldsGemma3Steps) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  expect_reservation_holds(Model::load(path));
}

}  // namespace
}  // namespace fasa
