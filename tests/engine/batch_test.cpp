// Session::forward_many (continuous batching): several sessions with different policies, some
// prefilling and some decoding in the same pass, give exactly what each gives alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "fasa/core/amx.h"
#include "fasa/core/error.h"
#include "fasa/engine/sampler.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/amx_env.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

using test::random_tokens;

struct Seq {
  std::string policy;
  std::vector<int32_t> prompt;
  int start_step;  // the batch step at which it arrives
};

constexpr int kNew = 12;  // greedy tokens generated per sequence

// Alone: Session::prefill (chunks of prefill_chunk) then greedy decode. Returns the logits after
// every step, prompt's last chunk first.
std::vector<std::vector<float>> alone(std::shared_ptr<const Model> model, SessionOptions so,
                                      const Seq& q) {
  so.policy = q.policy;
  Session s(model, so);
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < q.prompt.size(); i += so.prefill_chunk) {
    const size_t m = std::min<size_t>(so.prefill_chunk, q.prompt.size() - i);
    std::vector<int32_t> chunk(q.prompt.begin() + i, q.prompt.begin() + i + m);
    s.prefill(chunk);
  }
  out.push_back(s.last_logits());
  for (int k = 0; k < kNew; ++k) {
    const int n_vocab = model->config().n_vocab;
    out.push_back(s.decode(argmax(out.back().data(), n_vocab)));
  }
  return out;
}

// Batched: each step, every arrived sequence contributes its next prefill chunk or its next
// decode token to one forward_many call.
std::vector<std::vector<std::vector<float>>> batched(std::shared_ptr<const Model> model,
                                                     SessionOptions so,
                                                     const std::vector<Seq>& seqs) {
  const int n_vocab = model->config().n_vocab;
  std::vector<std::unique_ptr<Session>> sessions;
  for (const Seq& q : seqs) {
    so.policy = q.policy;
    sessions.push_back(std::make_unique<Session>(model, so));
  }
  std::vector<size_t> fed(seqs.size(), 0);    // prompt tokens appended so far
  std::vector<int32_t> next(seqs.size(), 0);  // decode token of this step
  std::vector<std::vector<std::vector<float>>> out(seqs.size());
  ForwardScratch scratch;
  for (int step = 0;; ++step) {
    std::vector<SessionChunk> chunks;
    std::vector<size_t> who;
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (step < seqs[i].start_step || out[i].size() == kNew + 1) continue;
      const auto& p = seqs[i].prompt;
      if (fed[i] < p.size()) {
        const int m = static_cast<int>(std::min<size_t>(so.prefill_chunk, p.size() - fed[i]));
        chunks.push_back({sessions[i].get(), p.data() + fed[i], m});
        fed[i] += m;
        if (fed[i] < p.size()) continue;  // logits of a middle chunk are nobody's
      } else {
        next[i] = argmax(out[i].back().data(), n_vocab);
        chunks.push_back({sessions[i].get(), &next[i], 1});
      }
      who.push_back(i);
    }
    if (chunks.empty()) break;
    Session::forward_many(chunks, scratch);
    for (size_t i : who) out[i].push_back(sessions[i]->last_logits());
  }
  return out;
}

void expect_batched_equals_alone(const test::TinySpec& spec, const std::string& file,
                                 int prefill_chunk = 8) {
  const std::string path = ::testing::TempDir() + "/" + file;
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  SessionOptions so;
  so.n_ctx = 96;
  so.prefill_chunk = prefill_chunk;
  const std::vector<Seq> seqs = {
      {"full", random_tokens(21, 320, 1), 0},
      {"streaming:budget=9,sinks=2", random_tokens(30, 320, 2), 0},
      {"oracle:budget=7", random_tokens(17, 320, 3), 2},
      {"h2o:budget=10", random_tokens(25, 320, 4), 3},  // learns from its own prefill queries
      {"full", random_tokens(1, 320, 5), 5},            // a one-token prompt
  };
  const auto together = batched(model, so, seqs);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const auto own = alone(model, so, seqs[i]);
    ASSERT_EQ(together[i].size(), own.size()) << seqs[i].policy;
    for (size_t k = 0; k < own.size(); ++k) {
      EXPECT_EQ(together[i][k], own[k])
          << "sequence " << i << " (" << seqs[i].policy << "), step " << k;
    }
  }
}

TEST(BatchTest, ForwardManyEqualsEachSessionAlone) {
  test::TinySpec spec;
  spec.wtype = DType::Q4_1;
  expect_batched_equals_alone(spec, "tiny_batch_llama.gguf");
}

// With AMX on, a batch holds chunks of 16 (the AMX tiles' bits) next to prompt tails and decode
// tokens that together make 16 rows or more: each still gets the bits it gets alone, because the
// kernel class follows the sequence's own chunk (model/forward.cpp), not the batch's size.
TEST(BatchTest, ForwardManyEqualsEachSessionAloneWithAmx) {
  if (!amx_supported()) GTEST_SKIP() << "no AMX here: " << amx_status();
  test::AmxEnv amx(true);
  ASSERT_TRUE(amx_active()) << amx_status();
  for (DType t : {DType::Q4_1, DType::Q4_K}) {
    test::TinySpec spec;
    spec.wtype = t;
    if (t == DType::Q4_K) {  // K-quants need rows of 256
      spec.d_model = 256;
      spec.d_ff = 512;
    }
    expect_batched_equals_alone(spec,
                                std::string("tiny_batch_amx_") + std::string(dtype_name(t)) +
                                    ".gguf",
                                16);
  }
}

TEST(BatchTest, ForwardManyEqualsEachSessionAloneWithSlidingWindows) {
  test::TinySpec spec;
  spec.wtype = DType::Q8_0;
  spec.arch = "gemma3";
  spec.n_layers = 3;
  spec.sliding_window = 5;
  spec.window_pattern = 2;
  spec.rope_base_local = 100.0f;
  expect_batched_equals_alone(spec, "tiny_batch_gemma.gguf");
}

TEST(BatchTest, BadBatchesAreErrorsThatChangeNothing) {
  const std::string path = ::testing::TempDir() + "/tiny_batch_bad.gguf";
  test::write_tiny_model(path, test::TinySpec{});
  auto model = Model::load(path);
  auto other = Model::load(path);  // the same file, another model object
  SessionOptions so;
  so.n_ctx = 16;
  so.prefill_chunk = 4;
  Session a(model, so), b(model, so), c(other, so);
  ForwardScratch scratch;
  const std::vector<int32_t> toks = {1, 2, 3, 4, 5};
  const int32_t bad = 320;
  auto expect_error = [&](const std::vector<SessionChunk>& chunks, const std::string& what) {
    try {
      Session::forward_many(chunks, scratch);
      ADD_FAILURE() << "no error for: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    EXPECT_EQ(a.n_past(), 0);
    EXPECT_EQ(b.n_past(), 0);
  };
  expect_error({{&a, toks.data(), 1}, {&c, toks.data(), 1}}, "one model");
  expect_error({{&a, toks.data(), 1}, {&a, toks.data(), 1}}, "only once");
  expect_error({{&a, toks.data(), 5}}, "1 to 4 tokens");
  expect_error({{&a, toks.data(), 0}}, "1 to 4 tokens");
  expect_error({{&a, toks.data(), 1}, {&b, &bad, 1}}, "out of range");
  for (int i = 0; i < 4; ++i) Session::forward_many({{&b, toks.data(), 4}}, scratch);
  EXPECT_EQ(b.n_past(), 16);
  try {
    Session::forward_many({{&a, toks.data(), 1}, {&b, toks.data(), 1}}, scratch);
    ADD_FAILURE() << "no error for a full context";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context overflow"), std::string::npos) << e.what();
  }
  EXPECT_EQ(a.n_past(), 0);
  EXPECT_EQ(b.n_past(), 16);
}

}  // namespace
}  // namespace fasa
