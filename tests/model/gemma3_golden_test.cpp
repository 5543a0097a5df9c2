// Gemma 3 270M (Q4_K_M; sliding-window and global layers) against llama.cpp goldens
// (scripts/dev/make_model_goldens.py --ctx 2048 --bos-per-chunk): teacher-forced top-1 agreement
// and perplexity over 4 chunks of 2048 tokens of Persuasion, logits at sampled positions, and the
// greedy answer to a chat prompt (support/model_golden.h). The engine's own tokenization and chat
// rendering must give the goldens' token ids (the tokenizer has its own, wider goldens too).
#include <gtest/gtest.h>

#include "support/model_golden.h"
#include "support/model_path.h"

namespace fasa {
namespace {

// llama.cpp's own decode path (n_batch 1) agrees with this golden (its batched path) on only
// 93.55 % of chunk 0's first 512 positions, and on every position where the golden's margin
// is >= 0.5 (scripts/dev/llamacpp_self_agreement.py; docs/CORRECTNESS.md). So: at least the
// reference's own agreement overall, near-exact where it is not at a near-tie. The sampled
// logits: the 16 positions below 1024 are enough, at half the run time.
const test::ModelGolden kGemma3 = {
    .goldens = "gemma3_persuasion_goldens.json",
    .chat_user = "What is the capital of France? Answer in one sentence.",
    .bos_per_chunk = true,
    .n_windowed_layers = 15,
    .min_agreement = 0.94,
    .min_agreement_confident = 0.995,
    .ppl_ratio_tol = 0.005,
    .logits_batch = 256,
    .logits_pos_end = 1024,
    .logit_tol = 1.0,
    .greedy_exact = false,
};

TEST(Gemma3Golden, TeacherForcedAgreementAndPerplexity) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  FASA_TEXT_OR_SKIP(persuasion, "austen_persuasion.txt");
  test::check_teacher_forced(kGemma3, path, persuasion);
}

TEST(Gemma3Golden, LogitsAtSampledPositions) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  test::check_sampled_logits(kGemma3, path);
}

TEST(Gemma3Golden, GreedyAnswer) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  test::check_chat_greedy(kGemma3, path);
}

}  // namespace
}  // namespace fasa
