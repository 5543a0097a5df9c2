// SmolLM2-135M-Instruct against llama.cpp goldens (scripts/dev/make_model_goldens.py):
// teacher-forced top-1 agreement and perplexity over 4 chunks of 1024 tokens of Persuasion,
// logits at sampled positions, and the greedy chat answer (support/model_golden.h).
#include <gtest/gtest.h>

#include "support/model_golden.h"
#include "support/model_path.h"

namespace fasa {
namespace {

// The reference is itself noisy at the level of near-ties: llama.cpp quantizes activations to
// 8 bits before every quantized matmul, so ulp-level changes flip roundings, and its own
// token-by-token path agrees with its batched path on only 95.7% of positions (chunk 0, first
// 512; every disagreement has a reference top-1 margin < 0.25 logits). See docs/CORRECTNESS.md.
// So: overall agreement at least llama.cpp's self-agreement, and near-exact agreement where the
// reference's top-1 leads the runner-up by >= 0.5 logits. llama.cpp's own token-by-token vs
// batched logits differ by up to 1.38 (mean 0.16) on chunk 0: sampled logits within 1.
// Its greedy answer is "L'Étoile, la Cité, ...": free-running greedy continuations part ways at
// the first near-tie, so the first token must be the reference's.
const test::ModelGolden kSmollm2 = {
    .goldens = "smollm2_persuasion_goldens.json",
    .chat_user = "What is the capital of France?",
    .min_agreement = 0.95,
    .min_agreement_confident = 0.995,
    .ppl_ratio_tol = 0.005,
    .logits_batch = 512,
    .logit_tol = 1.0,
    .greedy_exact = false,
};

TEST(Smollm2Golden, TeacherForcedAgreementAndPerplexity) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  FASA_TEXT_OR_SKIP(persuasion, "austen_persuasion.txt");
  test::check_teacher_forced(kSmollm2, path, persuasion);
}

TEST(Smollm2Golden, LogitsAtSampledPositions) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  test::check_sampled_logits(kSmollm2, path);
}

TEST(Smollm2Golden, ChatPromptTokensAndGreedyAnswer) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  test::check_chat_greedy(kSmollm2, path);
}

}  // namespace
}  // namespace fasa
