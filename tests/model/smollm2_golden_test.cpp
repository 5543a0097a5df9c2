// SmolLM2-135M-Instruct against llama.cpp goldens (scripts/dev/make_model_goldens.py):
// teacher-forced top-1 agreement and perplexity over 4 chunks of 1024 tokens of Persuasion,
// logits at sampled positions, and the greedy chat answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "fasa/engine/generate.h"
#include "fasa/engine/session.h"
#include "fasa/eval/perplexity.h"
#include "fasa/io/gguf.h"
#include "fasa/model/model.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/golden_agreement.h"
#include "support/model_path.h"

namespace fasa {
namespace {

const nlohmann::json& goldens() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::string(FASA_TEST_DATA_DIR) + "/model/smollm2_persuasion_goldens.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

std::shared_ptr<const Model> smollm2(const std::string& path) {
  static std::shared_ptr<const Model> m;
  if (!m) m = Model::load(path);
  return m;
}

TEST(Smollm2Golden, TeacherForcedAgreementAndPerplexity) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  FASA_TEXT_OR_SKIP(persuasion, "austen_persuasion.txt");
  const auto& g = goldens();
  auto model = smollm2(path);
  const std::vector<int32_t> tokens = g["tokens"].get<std::vector<int32_t>>();
  const int n_ctx = g["n_ctx"], n_chunks = g["n_chunks"];
  ASSERT_EQ(static_cast<int>(tokens.size()), n_ctx * n_chunks);
  // `fasa eval ppl --text` tokenizes the file itself: the same tokens as the reference's.
  {
    std::ifstream in(persuasion);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto ours = model->require_tokenizer().encode(text, true, false);
    ASSERT_GE(ours.size(), tokens.size());
    EXPECT_TRUE(std::equal(tokens.begin(), tokens.end(), ours.begin()));
  }

  PplOptions o;
  o.n_ctx = n_ctx;
  o.n_chunks = n_chunks;
  const PplResult r = perplexity(model, tokens, o, nullptr);

  // The reference is itself noisy at the level of near-ties: llama.cpp quantizes activations to
  // 8 bits before every quantized matmul, so ulp-level changes flip roundings, and its own
  // token-by-token path agrees with its batched path on only 95.7% of positions (chunk 0, first
  // 512; every disagreement has a reference top-1 margin < 0.25 logits). See docs/CORRECTNESS.md.
  // So: overall agreement at least llama.cpp's self-agreement, and near-exact agreement where the
  // reference's top-1 leads the runner-up by >= 0.5 logits.
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
  EXPECT_GE(agreement, 0.95);
  EXPECT_GE(agreement_conf, 0.995);
  EXPECT_NEAR(r.ppl / ref_ppl, 1.0, 0.005);
}

TEST(Smollm2Golden, LogitsAtSampledPositions) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto& g = goldens();
  auto model = smollm2(path);
  const std::vector<int32_t> all = g["tokens"].get<std::vector<int32_t>>();
  const int n_ctx = g["n_ctx"];
  const std::vector<int32_t> chunk(all.begin(), all.begin() + n_ctx);
  SessionOptions so;
  so.n_ctx = n_ctx;
  Session s(model, so);
  const auto logits = s.eval_all(chunk, 512);  // [n_ctx, n_vocab]
  const int n_vocab = model->config().n_vocab;
  double worst = 0.0;
  for (const auto& e : g["chunks"][0]["top16"]) {
    const int pos = e["pos"];
    const auto ids = e["ids"].get<std::vector<int32_t>>();
    const auto ref = e["logits"].get<std::vector<double>>();
    for (size_t k = 0; k < ids.size(); ++k) {
      const double got = logits[static_cast<size_t>(pos) * n_vocab + ids[k]];
      worst = std::max(worst, std::fabs(got - ref[k]));
    }
  }
  std::printf("max |logit - reference| over sampled top-16: %.4f\n", worst);
  // llama.cpp's own token-by-token vs batched logits differ by up to 1.38 (mean 0.16) on chunk 0.
  EXPECT_LT(worst, 1.0);
}

TEST(Smollm2Golden, ChatPromptTokensAndGreedyAnswer) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto& g = goldens();
  auto model = smollm2(path);
  const Tokenizer& tok = model->require_tokenizer();
  const std::string rendered =
      render_chat(detect_chat_format(model->file()), {{"user", "What is the capital of France?"}},
                  true, chat_default_system(model->file()));
  EXPECT_EQ(rendered, g["chat_prompt"].get<std::string>());
  const auto prompt = tok.encode(rendered, true, true);
  EXPECT_EQ(prompt, g["chat_prompt_tokens"].get<std::vector<int32_t>>());
  SessionOptions so;
  so.n_ctx = 256;
  Session s(model, so);
  GenerateOptions go;
  go.n_predict = 24;
  go.sampler.temp = 0.0f;
  const GenerateResult r = generate(s, prompt, go, nullptr);
  // llama.cpp's greedy answer (the golden) is "L'Étoile, la Cité, ...". Free-running greedy
  // continuations part ways at the first near-tie: the first token must be the reference's, and
  // the whole answer is checked teacher-forced below.
  const auto want = g["chat_greedy_tokens"].get<std::vector<int32_t>>();
  size_t same = 0;
  while (same < want.size() && same < r.tokens.size() && want[same] == r.tokens[same]) ++same;
  std::printf("greedy answer: %s (first %zu of %zu tokens as llama.cpp's)\n", r.text.c_str(), same,
              want.size());
  ASSERT_FALSE(r.tokens.empty());
  EXPECT_EQ(r.tokens[0], want[0]) << r.text;
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
