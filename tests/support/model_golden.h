// A real model against its llama.cpp goldens (tests/data/model/*_goldens.json, written by
// scripts/dev/make_model_goldens.py and make_qwen_model_goldens.py): the three checks every
// real-model golden test makes. A test states its model (path, goldens file, chat message) and
// its expectations in a ModelGolden, then calls one check per TEST:
//
//   TEST(FooGolden, TeacherForcedAgreementAndPerplexity) {
//     FASA_MODEL_OR_SKIP(path, test::foo_path);
//     FASA_TEXT_OR_SKIP(text, "austen_persuasion.txt");
//     test::check_teacher_forced(kFoo, path, text);
//   }
#pragma once

#include <string>

namespace fasa::test {

struct ModelGolden {
  std::string goldens;    // file name in tests/data/model
  std::string chat_user;  // the user message the goldens' chat prompt holds
  // The perplexity chunks start with BOS (make_model_goldens.py --bos-per-chunk): the engine's
  // tokens of the text get BOS at every chunk start before they are compared.
  bool bos_per_chunk = false;
  int n_windowed_layers = -1;  // the model's sliding-window layers (checked when >= 0)

  // check_teacher_forced over the goldens' chunks: top-1 agreement overall and where the
  // reference's top-1 leads its runner-up by >= 0.5 logits, and the perplexity's ratio to 1.
  double min_agreement = 0.95;
  double min_agreement_confident = 0.995;
  double ppl_ratio_tol = 0.005;

  // check_sampled_logits: chunk 0 in batches of `logits_batch` tokens, up to the last sampled
  // position below `logits_pos_end` (0: every sampled position); every sampled top-16 logit
  // within `logit_tol` of the reference's.
  int logits_batch = 512;
  int logits_pos_end = 0;
  double logit_tol = 1.0;

  // check_chat_greedy: the free-running greedy answer (24 tokens at most) must equal the
  // reference's whole answer when true, else start with its first token; the whole reference
  // answer, teacher-forced, within a near-tie everywhere (test::within_near_tie) in both cases.
  bool greedy_exact = false;
};

// The engine's tokens of `text_path` are the goldens' tokens; perplexity over the goldens' chunks
// with the agreement and perplexity bars of `m`; prints the agreement by reference margin.
void check_teacher_forced(const ModelGolden& m, const std::string& model_path,
                          const std::string& text_path);

// The logits at the goldens' sampled positions of chunk 0 against the reference's top-16.
void check_sampled_logits(const ModelGolden& m, const std::string& model_path);

// The chat prompt (rendering and tokens) is the goldens', and the greedy answer follows the
// reference's.
void check_chat_greedy(const ModelGolden& m, const std::string& model_path);

}  // namespace fasa::test
