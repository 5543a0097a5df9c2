// PyramidKV: against brute-force references (tests/attention/policies/eviction_fixture.h).
#include "attention/policies/eviction_fixture.h"

namespace fasa {
namespace {

// PyramidKV's per-layer budgets: the paper's example sizes, the clamp for short prompts, the
// uniform case, and the policy's selections: each layer keeps its own budget of SnapKV-voted
// slots, with the mean over the layers equal to the budget.
TEST(PyramidKvPolicy, LayerBudgetsFormAPyramidAroundTheBudget) {
  // B = 128, window 32, beta 20, 30 layers, a 1024-token prompt: voted parts 186 down to 4.
  int sum = 0;
  for (int l = 0; l < 30; ++l) {
    const int b = pyramid_layer_budget(128, 1025, 32, 20, 30, l);
    EXPECT_GE(b, 33);
    if (l > 0) {
      EXPECT_LE(b, pyramid_layer_budget(128, 1025, 32, 20, 30, l - 1));
    }
    sum += b;
  }
  EXPECT_EQ(pyramid_layer_budget(128, 1025, 32, 20, 30, 0), 186 + 33);
  EXPECT_EQ(pyramid_layer_budget(128, 1025, 32, 20, 30, 29), 4 + 33);
  EXPECT_EQ(sum, 30 * 128);
  // A prompt just long enough: the bottom layer is clamped to the prompt before the window.
  EXPECT_EQ(pyramid_layer_budget(25, 42, 4, 20, 2, 0), 42);
  EXPECT_EQ(pyramid_layer_budget(25, 42, 4, 20, 2, 1), 8);
  // A prompt shorter than twice the voted part: uniform, as in the authors' code.
  EXPECT_EQ(pyramid_layer_budget(40, 50, 4, 20, 2, 0), 40);
  EXPECT_EQ(pyramid_layer_budget(40, 50, 4, 20, 2, 1), 40);

  const int P = 40, W = 3, K = 7;
  Data d(P + 1, 5);
  auto p = policy_from("pyramidkv:budget=12,window=3,beta=4");
  d.prefill(*p, P, 16);
  int total = 0, checked = 0;
  for (int l = 0; l < kShape.n_layers; ++l) {
    const int kl = pyramid_layer_budget(12, P + 1, W, 4, 2, l);
    EXPECT_EQ(kl, l == 0 ? 14 + 4 : 2 + 4);  // v = 8: lo = 2, hi = 14, plus window + 1
    for (int g = 0; g < kShape.n_kv_heads; ++g) {
      Selection s;
      p->select(d.step(l, g, P + 1), s);
      ASSERT_FALSE(s.all);
      EXPECT_EQ(static_cast<int>(s.slots.size()), kl);
      total += static_cast<int>(s.slots.size());
      std::vector<int32_t> prompt(P);
      std::iota(prompt.begin(), prompt.end(), 0);
      bool clear = false;
      const auto want = snap_reference(d, l, g, P - W, W, prompt, K, kl - 1 - W, false, &clear);
      if (clear) {
        EXPECT_EQ(s.slots, with_range(want[0], P - W, P + 1)) << l;
      }
      checked += clear;
    }
  }
  EXPECT_EQ(total, 12 * kShape.n_layers * kShape.n_kv_heads);
  EXPECT_GE(checked, 3);
}

}  // namespace
}  // namespace fasa
