// The engine's forward pass on tiny random-weight models against the scalar reference forward,
// and its invariants: prefill == token-by-token decode, thread count and concurrent sequences do
// not change results.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "fasa/core/error.h"
#include "fasa/core/isa.h"
#include "fasa/core/parallel.h"
#include "fasa/engine/session.h"
#include "fasa/kernels/repack.h"
#include "fasa/model/model.h"
#include "support/isa_guard.h"
#include "support/scoped_env.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

std::string tiny_path(const std::string& name) { return ::testing::TempDir() + "/" + name; }

using test::random_tokens;

// Max |a - b| relative to the largest |b|.
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double mx = 0.0, scale = 1e-6;
  for (size_t i = 0; i < a.size(); ++i) {
    mx = std::max(mx, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return mx / scale;
}

struct Case {
  const char* name;
  test::TinySpec spec;
  bool neox;
  double tol;
};

// Readable names in test listings instead of gtest's byte dump.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ForwardVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(ForwardVsReference, LogitsMatch) {
  const Case& c = GetParam();
  const std::string path = tiny_path(std::string("tiny_") + c.name + ".gguf");
  test::write_tiny_model(path, c.spec);
  LoadOptions lo;
  if (c.neox) lo.rope_layout_override = RopeLayout::Neox;
  auto model = Model::load(path, lo);
  const auto tokens = random_tokens(19, c.spec.n_vocab, 11);
  const auto want = test::reference_forward(path, tokens, c.neox);
  SessionOptions so;
  so.kv_type = KvType::F32;
  so.n_ctx = 64;
  so.prefill_chunk = 8;  // several chunks
  Session s(model, so);
  const auto got = s.eval_all(tokens, 8);
  ASSERT_EQ(got.size(), want.size());
  // Finite and not flat (rel_err alone would let NaNs through).
  float mn = got[0], hi = got[0];
  for (float v : got) {
    ASSERT_TRUE(std::isfinite(v)) << c.name;
    mn = std::min(mn, v);
    hi = std::max(hi, v);
  }
  EXPECT_GT(hi - mn, 0.1f) << c.name;
  EXPECT_LT(rel_err(got, want), c.tol) << c.name;
}

test::TinySpec spec_with(DType t, int n_heads, int n_kv, bool tied = false) {
  test::TinySpec s;
  s.wtype = t;
  s.n_heads = n_heads;
  s.n_kv_heads = n_kv;
  s.tied_output = tied;
  return s;
}

test::TinySpec qwen2(test::TinySpec s) {
  s.arch = "qwen2";
  return s;
}

// Three layers: sliding (window 5), global, sliding; local RoPE base apart from the global one.
test::TinySpec gemma3(test::TinySpec s) {
  s.arch = "gemma3";
  s.n_layers = 3;
  s.sliding_window = 5;
  s.window_pattern = 2;
  s.rope_base_local = 100.0f;
  return s;
}

// A Q4_K_M-like file: Q4_K matrices, Q6_K attn_v and ffn_down; K-quant rows need 256 columns.
test::TinySpec q4_k_m(test::TinySpec s) {
  s.wtype = DType::Q4_K;
  s.wtype_mixed = DType::Q6_K;
  s.d_model = 256;
  s.d_ff = 512;
  return s;
}

test::TinySpec linear_rope(test::TinySpec s, float factor) {
  s.rope_scaling = "linear";
  s.rope_factor = factor;
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Tiny, ForwardVsReference,
    ::testing::Values(
        Case{"f32_norm_gqa", spec_with(DType::F32, 4, 2), false, 1e-4},
        Case{"f32_neox_gqa", spec_with(DType::F32, 4, 2), true, 1e-4},
        Case{"f32_norm_mha", spec_with(DType::F32, 4, 4), false, 1e-4},
        Case{"f32_neox_mqa_tied", spec_with(DType::F32, 4, 1, true), true, 1e-4},
        Case{"f16_norm_gqa", spec_with(DType::F16, 4, 2), false, 1e-4},
        Case{"q8_0_norm_gqa", spec_with(DType::Q8_0, 4, 2), false, 1e-4},
        Case{"q4_1_neox_gqa", spec_with(DType::Q4_1, 8, 2), true, 1e-4},
        Case{"q4_0_norm_gqa_tied", spec_with(DType::Q4_0, 4, 2, true), false, 1e-4},
        Case{"f32_neox_rope_linear4", linear_rope(spec_with(DType::F32, 4, 2), 4.0f), true, 1e-4},
        Case{"qwen2_f32_gqa", qwen2(spec_with(DType::F32, 4, 2)), true, 1e-4},
        Case{"qwen2_q8_0_gqa", qwen2(spec_with(DType::Q8_0, 4, 2)), true, 1e-4},
        Case{"gemma3_f32_gqa", gemma3(spec_with(DType::F32, 4, 2)), true, 1e-4},
        Case{"gemma3_q8_0_mqa_tied", gemma3(spec_with(DType::Q8_0, 4, 1, true)), true, 1e-4},
        Case{"llama_q4_k_m_gqa", q4_k_m(spec_with(DType::F32, 4, 2)), false, 1e-4},
        Case{"qwen2_q4_k_m_gqa", qwen2(q4_k_m(spec_with(DType::F32, 4, 2))), true, 1e-4},
        Case{"gemma3_q4_k_m_mqa", gemma3(q4_k_m(spec_with(DType::F32, 4, 1))), true, 1e-4},
        Case{"gemma3_f32_rope_linear2", linear_rope(gemma3(spec_with(DType::F32, 4, 2)), 2.0f),
             true, 1e-4}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ForwardTest, F16CacheCloseToReference) {
  const std::string path = tiny_path("tiny_f16kv.gguf");
  test::write_tiny_model(path, spec_with(DType::Q8_0, 4, 2));
  auto model = Model::load(path);
  const auto tokens = random_tokens(23, 320, 5);
  const auto want = test::reference_forward(path, tokens, false, /*f16_kv=*/true);
  SessionOptions so;
  so.n_ctx = 64;
  Session s(model, so);
  EXPECT_LT(rel_err(s.eval_all(tokens, 23), want), 5e-3);
}

// Prefill in chunks of any size gives bit-identical logits to one-token decode steps.
TEST(ForwardTest, PrefillEqualsTokenByTokenDecode) {
  const std::string path = tiny_path("tiny_prefill.gguf");
  test::write_tiny_model(path, spec_with(DType::Q4_1, 4, 2));
  auto model = Model::load(path);
  const auto tokens = random_tokens(37, 320, 9);
  for (KvType kv : {KvType::F16, KvType::F32}) {
    SessionOptions so;
    so.kv_type = kv;
    so.n_ctx = 64;
    Session a(model, so), b(model, so), c(model, so);
    const auto whole = a.eval_all(tokens, 37);
    const auto one_by_one = b.eval_all(tokens, 1);
    const auto chunks = c.eval_all(tokens, 10);
    EXPECT_EQ(whole, one_by_one);
    EXPECT_EQ(whole, chunks);
  }
}

// Sliding-window layers: prefill in any chunking equals token-by-token decode bit for bit, and
// their rings stay at window + max_batch - 1 rows while global layers grow with the sequence.
TEST(ForwardTest, SlidingWindowRingBuffer) {
  const std::string path = tiny_path("tiny_gemma_ring.gguf");
  test::write_tiny_model(path, gemma3(spec_with(DType::Q8_0, 4, 2)));
  auto model = Model::load(path);
  ASSERT_TRUE(model->config().windowed(0));
  ASSERT_FALSE(model->config().windowed(1));
  const auto tokens = random_tokens(40, 320, 4);
  for (KvType kv : {KvType::F16, KvType::F32}) {
    SessionOptions so;
    so.kv_type = kv;
    so.n_ctx = 64;
    so.prefill_chunk = 4;
    Session a(model, so), b(model, so), c(model, so);
    const auto chunks = a.eval_all(tokens, 7);  // runs as pieces of at most 4
    const auto one_by_one = b.eval_all(tokens, 1);
    EXPECT_EQ(chunks, one_by_one);
    // Row bytes per layer as the sequence grows, one token at a time.
    const uint64_t row = 2ull * 2 * 16 * (kv == KvType::F16 ? 2 : 4);  // K+V, 2 kv heads
    const int ring = 5 + 4 - 1;
    EXPECT_EQ(c.cache().layer_capacity(0), ring);
    EXPECT_EQ(c.cache().layer_capacity(1), 64);
    for (int n = 1; n <= 40; ++n) {
      c.decode(tokens[n - 1]);
      EXPECT_EQ(c.cache().layer_used_bytes(0), std::min(n, ring) * row) << n;
      EXPECT_EQ(c.cache().layer_used_bytes(2), std::min(n, ring) * row) << n;
      EXPECT_EQ(c.cache().layer_used_bytes(1), static_cast<uint64_t>(n) * row) << n;
    }
    EXPECT_EQ(c.last_logits(), std::vector<float>(one_by_one.end() - 320, one_by_one.end()));
  }
  // Against the reference that masks by window over the full sequence (40 tokens, 8 windows).
  SessionOptions so;
  so.kv_type = KvType::F32;
  so.n_ctx = 64;
  so.prefill_chunk = 3;
  Session s(model, so);
  EXPECT_LT(rel_err(s.eval_all(tokens, 40), test::reference_forward(path, tokens, true)), 1e-4);
}

TEST(ForwardTest, ThreadCountDoesNotChangeLogits) {
  const std::string path = tiny_path("tiny_threads.gguf");
  test::write_tiny_model(path, spec_with(DType::Q8_0, 4, 2));
  auto model = Model::load(path);
  const auto tokens = random_tokens(29, 320, 3);
  SessionOptions so;
  so.n_ctx = 64;
  set_num_threads(1);
  Session a(model, so);
  const auto one = a.eval_all(tokens, 16);
  set_num_threads(2);
  Session b(model, so);
  const auto two = b.eval_all(tokens, 16);
  set_num_threads(0);
  EXPECT_EQ(one, two);
}

// A session whose decode team grows (2 threads, then 3) gives the new worker its own rows and
// the bits of one thread.
TEST(ForwardTest, DecodeTeamGrowingMidSessionKeepsTheBits) {
  const std::string path = tiny_path("tiny_team_grow.gguf");
  test::write_tiny_model(path, spec_with(DType::Q8_0, 4, 2));
  auto model = Model::load(path);
  SessionOptions so;
  so.n_ctx = 64;
  const auto prompt = random_tokens(9, 320, 5);
  auto run = [&](int first_threads, int then_threads) {
    set_num_threads(first_threads);
    Session s(model, so);
    s.prefill(prompt);
    std::vector<float> out = s.decode(3);
    set_num_threads(then_threads);
    for (int32_t t : {11, 12}) {
      const std::vector<float>& l = s.decode(t);
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  };
  const std::vector<float> one = run(1, 1);
  const std::vector<float> grown = run(2, 3);
  set_num_threads(0);
  EXPECT_EQ(one, grown);
}

// Issue 21: a decode step is one team region (one dispatch) whose workers meet at most 6 times
// per layer (q/k/v, attention's hand-off and end, o, gate/up, down) plus the commit, the logits
// and the region's end. Every matrix here is above matmul's one-thread threshold (65536
// multiply-adds), so no product runs on worker 0 alone.
TEST(ForwardTest, DecodeStepIsOneDispatch) {
  test::TinySpec spec = spec_with(DType::Q4_K, 4, 2);
  spec.d_model = 256;
  spec.d_ff = 512;
  spec.wtype_mixed = DType::Q6_K;  // attn_v and ffn_down: mixed types in one fused call
  const std::string path = tiny_path("tiny_regions.gguf");
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  SessionOptions so;
  so.n_ctx = 64;
  set_num_threads(2);
  Session s(model, so);
  s.prefill(random_tokens(9, spec.n_vocab, 4));
  const ParallelStats before = parallel_stats();
  s.decode(7);
  const ParallelStats d = parallel_stats() - before;
  set_num_threads(0);
  // A decode step is one team (forward.cpp): one dispatch; per layer the workers meet after
  // q/k/v, twice around attention (its hand-off and its end), after o, gate/up and down.
  EXPECT_EQ(d.dispatches, 1u);
  EXPECT_LE(d.barriers, 6u * spec.n_layers + 4u);
  EXPECT_GE(d.barriers, 4u * spec.n_layers);
}

TEST(ForwardTest, ConcurrentSessionsShareWeights) {
  const std::string path = tiny_path("tiny_concurrent.gguf");
  test::write_tiny_model(path, spec_with(DType::Q4_1, 4, 2));
  auto model = Model::load(path);
  SessionOptions so;
  so.n_ctx = 64;
  std::vector<std::vector<int32_t>> prompts = {random_tokens(20, 320, 1), random_tokens(31, 320, 2),
                                               random_tokens(12, 320, 3)};
  std::vector<std::vector<float>> serial, parallel(prompts.size());
  for (const auto& p : prompts) {
    Session s(model, so);
    serial.push_back(s.eval_all(p, 4));
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < prompts.size(); ++i) {
    threads.emplace_back([&, i] {
      Session s(model, so);
      parallel[i] = s.eval_all(prompts[i], 4);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(serial, parallel);
}

TEST(ForwardTest, BadTokensAndOverflowAreErrors) {
  const std::string path = tiny_path("tiny_bad.gguf");
  test::write_tiny_model(path, spec_with(DType::F32, 4, 2));
  auto model = Model::load(path);
  SessionOptions so;
  so.n_ctx = 16;
  Session s(model, so);
  EXPECT_THROW(s.prefill({1, 2, 320}), Error);
  EXPECT_THROW(s.prefill({-1}), Error);
  EXPECT_THROW(s.prefill(random_tokens(17, 320, 1)), Error);
  EXPECT_THROW(s.prefill({}), Error);
  s.prefill(random_tokens(16, 320, 1));
  EXPECT_THROW(s.decode(5), Error);
  so.n_ctx = 100000;
  EXPECT_THROW(Session(model, so), Error);  // beyond the trained context
  so.n_ctx = 16;
  so.policy = "nonsense";
  EXPECT_THROW(Session(model, so), Error);
}

}  // namespace
}  // namespace fasa

namespace fasa {
namespace {

// Projections repacked at load (kernels/repack.h: Q4_K / Q6_K, and Q4_1 / Q8_0 / Q4_0) give the
// logits of the file's rows bit for bit, in prefill chunks and one token at a time (the 16-row
// kernels); FASA_NO_REPACK, LoadOptions and a non-AVX-512 instruction set turn it off.
TEST(ForwardTest, RepackedWeightsGiveTheSameLogits) {
  if (active_isa() != Isa::Avx512) GTEST_SKIP() << "repacking needs AVX-512";
  const std::pair<DType, DType> kTypes[] = {{DType::Q4_K, DType::Q6_K},
                                            {DType::Q4_1, DType::Q8_0},
                                            {DType::Q4_0, DType::Q8_0}};
  for (const auto& [wtype, mixed] : kTypes) {
    for (bool tied : {false, true}) {
      test::TinySpec spec;
      spec.wtype = wtype;
      spec.wtype_mixed = mixed;  // attn_v and ffn_down
      spec.d_model = 256;
      spec.d_ff = 512;
      spec.tied_output = tied;  // the embedding then reads the repacked output matrix
      const std::string what = std::string(dtype_name(wtype)) + (tied ? " tied" : "");
      const std::string path = tiny_path(tied ? "tiny_repack_tied.gguf" : "tiny_repack.gguf");
      test::write_tiny_model(path, spec);
      LoadOptions off;
      off.repack = false;
      auto plain = Model::load(path, off);
      auto packed = Model::load(path);
      EXPECT_EQ(plain->repacked_matrices(), 0);
      EXPECT_EQ(plain->repack_status(), "off (disabled)");
      EXPECT_EQ(packed->repacked_matrices(), 7 * spec.n_layers + 1) << what;  // + output
      EXPECT_EQ(packed->weights().layers[0].wv.type, repacked_type(mixed)) << what;
      EXPECT_EQ(packed->weights().layers[0].wq.type, repacked_type(wtype)) << what;
      EXPECT_EQ(packed->weights().tok_embd.type, tied ? repacked_type(wtype) : wtype) << what;
      const auto tokens = random_tokens(21, spec.n_vocab, 5);
      SessionOptions so;
      so.n_ctx = 64;
      for (int chunk : {1, 8}) {
        Session a(plain, so), b(packed, so);
        EXPECT_EQ(a.eval_all(tokens, chunk), b.eval_all(tokens, chunk))
            << what << " chunk " << chunk;
      }
    }
  }
  const std::string path = tiny_path("tiny_repack.gguf");
  {
    test::ScopedEnv env("FASA_NO_REPACK", "1");
    auto m = Model::load(path);
    EXPECT_EQ(m->repacked_matrices(), 0);
    EXPECT_EQ(m->repack_status(), "off (FASA_NO_REPACK)");
  }
  IsaGuard guard;
  set_active_isa(Isa::Avx2);
  auto m = Model::load(path);
  EXPECT_EQ(m->repacked_matrices(), 0);
  EXPECT_EQ(m->repack_status(), "off (instruction set is not avx512)");
}

}  // namespace
}  // namespace fasa
