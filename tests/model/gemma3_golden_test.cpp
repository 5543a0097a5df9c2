// Gemma 3 270M (Q4_K_M; sliding-window and global layers) against llama.cpp goldens
// (scripts/dev/make_model_goldens.py --ctx 2048 --bos-per-chunk): teacher-forced top-1 agreement
// and perplexity over 4 chunks of 2048 tokens of Persuasion, logits at sampled positions, and the
// greedy answer to a chat prompt. The engine's own tokenization and chat rendering must give
// the goldens' token ids (the tokenizer has its own, wider goldens too).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "fasa/engine/generate.h"
#include "fasa/engine/session.h"
#include "fasa/eval/perplexity.h"
#include "fasa/model/model.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/golden_agreement.h"
#include "support/model_path.h"

namespace fasa {
namespace {

const nlohmann::json& goldens() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::string(FASA_TEST_DATA_DIR) + "/model/gemma3_persuasion_goldens.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

std::shared_ptr<const Model> gemma3(const std::string& path) {
  static std::shared_ptr<const Model> m;
  if (!m) m = Model::load(path);
  return m;
}

TEST(Gemma3Golden, TeacherForcedAgreementAndPerplexity) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  FASA_TEXT_OR_SKIP(persuasion, "austen_persuasion.txt");
  const auto& g = goldens();
  auto model = gemma3(path);
  ASSERT_EQ(model->config().n_windowed_layers(), 15);
  const std::vector<int32_t> tokens = g["tokens"].get<std::vector<int32_t>>();
  const int n_ctx = g["n_ctx"], n_chunks = g["n_chunks"];
  ASSERT_EQ(static_cast<int>(tokens.size()), n_ctx * n_chunks);
  // `fasa eval ppl --text` tokenizes the file itself and starts every chunk with BOS: the same
  // tokens as the reference's.
  {
    std::ifstream in(persuasion);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const Tokenizer& tok = model->require_tokenizer();
    auto ours = tok.encode(text, true, false);
    ASSERT_GE(ours.size(), tokens.size());
    ours.resize(tokens.size());
    for (int c = 0; c < n_chunks; ++c) ours[static_cast<size_t>(c) * n_ctx] = tok.bos_id();
    EXPECT_EQ(ours, tokens);
  }
  PplOptions o;
  o.n_ctx = n_ctx;
  o.n_chunks = n_chunks;
  const PplResult r = perplexity(model, tokens, o, nullptr);
  const test::GoldenAgreement ag = test::golden_agreement(g, r.argmax);
  const int agree = ag.agree, total = ag.total, agree_conf = ag.agree_conf,
            total_conf = ag.total_conf;
  const double agreement = ag.overall(), agreement_conf = ag.confident();
  const double ref_ppl = g["ppl"];
  std::printf(
      "top-1 agreement %.4f (%d/%d); where reference margin >= 0.5: %.4f (%d/%d); "
      "ppl %.4f vs reference %.4f (%+.3f%%)\n",
      agreement, agree, total, agreement_conf, agree_conf, total_conf, r.ppl, ref_ppl,
      100.0 * (r.ppl / ref_ppl - 1.0));
  // llama.cpp's own decode path (n_batch 1) agrees with this golden (its batched path) on only
  // 93.55 % of chunk 0's first 512 positions, and on every position where the golden's margin
  // is >= 0.5 (scripts/dev/llamacpp_self_agreement.py; docs/CORRECTNESS.md). So: at least the
  // reference's own agreement overall, near-exact where it is not at a near-tie.
  EXPECT_GE(agreement, 0.94);
  EXPECT_GE(agreement_conf, 0.995);
  EXPECT_NEAR(r.ppl / ref_ppl, 1.0, 0.005);
}

TEST(Gemma3Golden, LogitsAtSampledPositions) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const auto& g = goldens();
  auto model = gemma3(path);
  const std::vector<int32_t> all = g["tokens"].get<std::vector<int32_t>>();
  const int n_ctx = g["n_ctx"];
  SessionOptions so;
  so.n_ctx = n_ctx;
  Session s(model, so);
  const int n_vocab = model->config().n_vocab;
  double worst = 0.0, sum = 0.0;
  int n_diff = 0;
  int done = 0;  // tokens evaluated so far; logits are kept one batch at a time
  for (const auto& e : g["chunks"][0]["top16"]) {
    const int pos = e["pos"];
    if (pos >= 1024) break;  // 16 sampled positions are enough, at half the run time
    const std::vector<int32_t> next(all.begin() + done, all.begin() + pos + 1);
    const auto logits = s.eval_all(next, 256);  // [pos + 1 - done, n_vocab]
    done = pos + 1;
    const float* row = logits.data() + (logits.size() - n_vocab);
    const auto ids = e["ids"].get<std::vector<int32_t>>();
    const auto ref = e["logits"].get<std::vector<double>>();
    for (size_t k = 0; k < ids.size(); ++k) {
      const double d = std::fabs(row[ids[k]] - ref[k]);
      worst = std::max(worst, d);
      sum += d;
      ++n_diff;
    }
  }
  std::printf("max |logit - reference| over sampled top-16: %.4f (mean %.4f)\n", worst,
              sum / n_diff);
  EXPECT_LT(worst, 1.0);
}

TEST(Gemma3Golden, GreedyAnswer) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const auto& g = goldens();
  auto model = gemma3(path);
  const auto prompt = g["chat_prompt_tokens"].get<std::vector<int32_t>>();
  const std::string rendered =
      render_chat(detect_chat_format(model->file()),
                  {{"user", "What is the capital of France? Answer in one sentence."}}, true,
                  chat_default_system(model->file()));
  EXPECT_EQ(rendered, g["chat_prompt"].get<std::string>());
  EXPECT_EQ(model->require_tokenizer().encode(rendered, true, true), prompt);
  const auto want = g["chat_greedy_tokens"].get<std::vector<int32_t>>();
  SessionOptions so;
  so.n_ctx = 256;
  Session s(model, so);
  std::vector<int32_t> got;
  const std::vector<float>* logits = &s.prefill(prompt);
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& l = *logits;
    got.push_back(static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin()));
    logits = &s.decode(got.back());
  }
  size_t same = 0;
  while (same < want.size() && want[same] == got[same]) ++same;
  std::printf("greedy: first %zu of %zu tokens as llama.cpp's\n", same, want.size());
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0], want[0]);
  // The whole recorded answer, teacher-forced (each step fed the reference's token): every
  // one of its tokens is our top-1, or within a near-tie of it, where free-running greedy
  // answers may part ways.
  Session tf(model, so);
  const test::GreedyCheck c = test::teacher_forced_greedy(tf, prompt, want);
  std::printf("teacher-forced over the whole answer: %s\n", c.report().c_str());
  EXPECT_TRUE(test::within_near_tie(c, want));
}

}  // namespace
}  // namespace fasa
