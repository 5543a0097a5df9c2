// `fasa run --prompt-cache FILE` (engine/prompt_file.h): a saved prefix comes back bit for bit
// (rows, positions, logits) and a run started from it generates what an uncached run does, on a
// plain and a hybrid model; every kind of bad file is refused by name.
#include "fasa/engine/prompt_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "fasa/core/sha256.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/prompt_cache.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/expect_error.h"
#include "support/temp_files.h"
#include "support/threads_guard.h"
#include "support/tiny_byte_model.h"

namespace fasa {
namespace {

using test::slurp;

SessionOptions options(const std::string& policy, KvType kv = KvType::F16) {
  return test::tiny_session(policy, 128, kv);
}

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A saved prompt, restored into a `full` session and handed out by a PromptCache (as `fasa
// run` does): the next prompt's generation equals an uncached one.
void expect_round_trip(const std::shared_ptr<const Model>& model, const std::string& name) {
  test::ThreadsGuard one(1);
  const int n_vocab = model->config().n_vocab;
  const auto first = test::random_prompt(60, n_vocab, 1);  // over the hybrid rings (5 + 16 - 1)
  const std::string file = ::testing::TempDir() + "/" + name;
  for (const KvType kv : {KvType::F32, KvType::F16}) {  // the file ends as f16, for below
    Session a(model, options("full", kv));
    a.prefill(first);
    save_prompt_file(file, a, first);
    EXPECT_EQ(peek_prompt_file(file).n_tokens, 60);
    Session b(model, options("full", kv));
    EXPECT_EQ(load_prompt_file(file, b), first);
    EXPECT_EQ(b.n_past(), 60);
    EXPECT_EQ(b.last_logits(), a.last_logits());
    for (int l = 0; l < model->config().n_layers; ++l) {
      const size_t bytes = static_cast<size_t>(a.cache().layer_capacity(l)) * a.cache().row_bytes();
      EXPECT_EQ(std::memcmp(a.cache().k_rows(l, 0), b.cache().k_rows(l, 0), bytes), 0) << l;
      EXPECT_EQ(std::memcmp(a.cache().v_rows(l, 0), b.cache().v_rows(l, 0), bytes), 0) << l;
    }
  }
  // The same prompt and a longer one (the first plus a question), through a PromptCache.
  for (const auto& prompt : {first, [&] {
                               auto p = first;
                               const auto q = test::random_prompt(9, n_vocab, 2);
                               p.insert(p.end(), q.begin(), q.end());
                               return p;
                             }()}) {
    for (const std::string policy : {"full", "streaming:budget=4,sinks=1"}) {
      Session want_s(model, options(policy));
      const GenerateResult want = generate(want_s, prompt, test::greedy_options(10), nullptr);
      Session s(model, options(policy));
      auto src = std::make_unique<Session>(model, options("full"));
      auto saved = load_prompt_file(file, *src);
      PromptCache cache(UINT64_MAX);
      cache.adopt(std::move(src), std::move(saved));
      const int reused = cache.start(s, prompt);
      EXPECT_EQ(reused, prompt.size() == first.size() ? 60 : 48)  // all; or its whole chunks
          << policy;
      if (reused < static_cast<int>(prompt.size())) {
        s.prefill(std::vector<int32_t>(prompt.begin() + reused, prompt.end()));
      }
      EXPECT_EQ(generate_from_prefilled(s, test::greedy_options(10), nullptr).tokens, want.tokens)
          << policy;
    }
  }
}

// An online-calibrated policy's file keeps the prompt queries it calibrates from: a run that
// reuses the prefix (all of it, or its whole chunks before a new tail) calibrates from the
// prompt, not from its decode steps, and generates what an uncached run does; a file saved
// under `full` has none, and the policy then calibrates from its first decode steps (or from
// the new tail alone, which with queries spread over the prompt is not the uncached calibration).
void expect_online_calibration_kept(const std::shared_ptr<const Model>& model,
                                    const std::string& name, const std::string& spread = "0") {
  test::ThreadsGuard one(1);
  const int n_vocab = model->config().n_vocab;
  const std::string policy =
      "fasa:calib=online,calib_window=8,calib_spread=" + spread + ",budget=6,dense_layers=none";
  const auto first = test::random_prompt(60, n_vocab, 5);
  const std::string file = ::testing::TempDir() + "/" + name;
  auto longer = first;
  const auto q = test::random_prompt(9, n_vocab, 6);
  longer.insert(longer.end(), q.begin(), q.end());
  for (const std::string& saved_by : {policy, std::string("full")}) {
    Session a(model, options(saved_by));
    a.prefill(first);
    save_prompt_file(file, a, first);
    for (const auto& prompt : {first, longer}) {
      Session want_s(model, options(policy));
      const GenerateResult want = generate(want_s, prompt, test::greedy_options(10), nullptr);
      ASSERT_FALSE(want_s.facets().online_calibration()->from_decode);
      Session s(model, options(policy));
      auto src = std::make_unique<Session>(model, options("full"));
      std::unique_ptr<QueryWindow> queries;
      auto saved = load_prompt_file(file, *src, &queries);
      EXPECT_EQ(queries != nullptr, saved_by != "full");
      PromptCache cache(UINT64_MAX);
      cache.adopt(std::move(src), std::move(saved));
      const int reused = cache.start(s, prompt);
      EXPECT_EQ(reused, prompt.size() == first.size() ? 60 : 48);
      if (queries) s.replay_prefill_queries(*queries, reused);
      if (reused < static_cast<int>(prompt.size())) {
        s.prefill(std::vector<int32_t>(prompt.begin() + reused, prompt.end()));
      }
      const GenerateResult got = generate_from_prefilled(s, test::greedy_options(10), nullptr);
      const OnlineCalibrationInfo* oc = s.facets().online_calibration();
      ASSERT_TRUE(oc && oc->done) << saved_by;
      // From the prompt: the saved queries, or (the longer prompt) the tail's prefill, which
      // fills the window of 8 without them.
      const bool from_prompt = saved_by != "full" || prompt.size() - reused >= 8;
      EXPECT_EQ(oc->from_decode, !from_prompt) << saved_by << " " << prompt.size();
      if (saved_by != "full" || (from_prompt && spread == "0")) {
        EXPECT_EQ(got.tokens, want.tokens) << saved_by << " " << prompt.size();
      }
    }
  }
}

TEST(PromptFile, KeepsTheOnlineCalibrationsPromptQueries) {
  expect_online_calibration_kept(test::tiny_byte_model("prompt_file_online.gguf", false),
                                 "prompt_file_online.fasakv");
}

TEST(PromptFile, KeepsTheOnlineCalibrationsSpreadPromptQueries) {
  expect_online_calibration_kept(test::tiny_byte_model("prompt_file_online_spread.gguf", false),
                                 "prompt_file_online_spread.fasakv", "5");
}

TEST(PromptFile, KeepsTheOnlineCalibrationsPromptQueriesOnAHybridModel) {
  expect_online_calibration_kept(test::tiny_byte_model("prompt_file_online_hybrid.gguf", true),
                                 "prompt_file_online_hybrid.fasakv");
}

TEST(PromptFile, RoundTripsAndRunsOnAsUncached) {
  expect_round_trip(test::tiny_byte_model("prompt_file.gguf", false), "prompt_file.fasakv");
}

TEST(PromptFile, RoundTripsOnAHybridModel) {
  expect_round_trip(test::tiny_byte_model("prompt_file_hybrid.gguf", true),
                    "prompt_file_hybrid.fasakv");
}

TEST(PromptFile, BadFilesAreRefusedByName) {
  test::ThreadsGuard one(1);
  const auto model = test::tiny_byte_model("prompt_file_bad.gguf", false);
  const int n_vocab = model->config().n_vocab;
  const auto tokens = test::random_prompt(20, n_vocab, 3);
  const std::string dir = ::testing::TempDir() + "/";
  const std::string good = dir + "prompt_file_good.fasakv";
  Session a(model, options("full"));
  a.prefill(tokens);
  save_prompt_file(good, a, tokens);
  const std::string bytes = slurp(good);
  auto load = [&](const std::string& path, const SessionOptions& so = options("full")) {
    Session s(model, so);
    load_prompt_file(path, s);
  };
  const std::string bad = dir + "prompt_file_damaged.fasakv";
  spit(bad, "GGUF and then some bytes that are no prompt cache at all");
  test::expect_error([&] { load(bad); }, "is not a fasa prompt cache");
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 1;
  spit(bad, flipped);
  test::expect_error([&] { load(bad); }, "checksum mismatch");
  spit(bad, bytes.substr(0, bytes.size() - 100));
  test::expect_error([&] { load(bad); }, "checksum mismatch");
  // Another version, with a checksum that fits: the version is named.
  std::string v3 = bytes.substr(0, bytes.size() - 64);
  v3[8] = 3;
  spit(bad, v3 + sha256_hex(v3));
  test::expect_error([&] { load(bad); }, "has version 3; this build reads versions 1 and 2");
  // Version 1 (no queries section: this file's is one u32 0) is still read.
  std::string v1 = bytes.substr(0, bytes.size() - 64 - 4);
  v1[8] = 1;
  spit(bad, v1 + sha256_hex(v1));
  {
    Session s(model, options("full"));
    EXPECT_EQ(load_prompt_file(bad, s), tokens);
  }
  // Queries of another shape (a checksum that fits): refused as damaged.
  std::string q = bytes.substr(0, bytes.size() - 64 - 4);
  put_u32(q, 7);
  put_u32(q, 1);
  spit(bad, q + sha256_hex(q));
  test::expect_error([&] { load(bad); }, "its queries are not the model's shape");
  test::expect_error([&] { load(dir + "no_such_prompt_cache.fasakv"); },
                     "cannot read prompt cache");
  test::expect_error([&] { load(good, options("full", KvType::F32)); }, "another KV type");
  SessionOptions small = options("full");
  small.n_ctx = 16;
  test::expect_error([&] { load(good, small); }, "more than the context of 16");
  test::expect_error([&] { load(good, options("h2o:budget=6")); },
                     "learns from the prefill queries");
  // Another model (other weights): refused by its sha256.
  const auto other = test::tiny_byte_model("prompt_file_other.gguf", false, 99);
  Session o(other, options("full"));
  test::expect_error([&] { load_prompt_file(good, o); }, "was made with another model");
  // Saving refuses a session that does not hold exactly the tokens given.
  test::expect_error([&] { save_prompt_file(bad, a, test::random_prompt(5, n_vocab, 4)); },
                     "holds 20 tokens, not the 5 given");
}

}  // namespace
}  // namespace fasa
