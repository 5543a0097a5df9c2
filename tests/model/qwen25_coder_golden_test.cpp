// Qwen2.5-Coder-1.5B-Instruct Q4_K_M (arch qwen2) against llama.cpp goldens
// (scripts/dev/make_qwen_model_goldens.py): teacher-forced top-1 agreement and perplexity over
// 4 chunks of 2048 tokens of Persuasion, logits at sampled positions, and the greedy chat answer
// (support/model_golden.h).
//
// The model is 1.1 GB and opt-in (`fasa pull qwen2.5-coder-1.5b`; CI does not pull it): every
// test skips when it is missing, and fails instead only under FASA_REQUIRE_QWEN=1. The
// teacher-forced test runs 8,192 tokens through a 1.5B model: minutes, not seconds (the measured
// time is in docs/CORRECTNESS.md).
#include <gtest/gtest.h>

#include "support/model_golden.h"
#include "support/model_path.h"

namespace fasa {
namespace {

// Agreement: >= 98 % top-1 agreement is not a fair bar: llama.cpp's own token-by-token run
// agrees with its batched run (the reference) on only 94.1 % of chunk 0's first 512 positions,
// every disagreement at a reference margin < 0.29 (scripts/dev/llamacpp_self_agreement.py;
// docs/CORRECTNESS.md). So: overall agreement above llama.cpp's self-agreement, near-exact
// agreement where the reference's top-1 leads by >= 0.5 logits, and perplexity within 0.5 %.
// The greedy answer is "The capital of France is Paris." then <|im_end|>: ours is the same,
// token for token (no near-tie on the way).
const test::ModelGolden kQwen = {
    .goldens = "qwen2.5-coder-1.5b_persuasion_goldens.json",
    .chat_user = "What is the capital of France?",
    .min_agreement = 0.95,
    .min_agreement_confident = 0.995,
    .ppl_ratio_tol = 0.005,
    .logits_batch = 512,
    .logit_tol = 1.0,
    .greedy_exact = true,
};

TEST(Qwen25CoderGolden, TeacherForcedAgreementAndPerplexity) {
  FASA_QWEN_OR_SKIP(path);
  FASA_TEXT_OR_SKIP(persuasion, "austen_persuasion.txt");
  test::check_teacher_forced(kQwen, path, persuasion);
}

TEST(Qwen25CoderGolden, LogitsAtSampledPositions) {
  FASA_QWEN_OR_SKIP(path);
  test::check_sampled_logits(kQwen, path);
}

TEST(Qwen25CoderGolden, ChatPromptTokensAndGreedyAnswer) {
  FASA_QWEN_OR_SKIP(path);
  test::check_chat_greedy(kQwen, path);
}

}  // namespace
}  // namespace fasa
