// engine/prompt_file_run.h (what `fasa run --prompt-cache FILE` calls): the first run writes the
// file, a run of the same prompt prefills nothing, a longer prompt reuses the file's whole
// chunks, every run generates what an uncached one does, and a file longer than the context is
// a note and then rewritten.
#include "fasa/engine/prompt_file_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fasa/engine/prompt_file.h"
#include "support/threads_guard.h"
#include "support/tiny_byte_model.h"

namespace fasa {
namespace {

TEST(PromptFileRun, WritesReusesAndGeneratesAsUncached) {
  test::ThreadsGuard one(1);
  const auto model = test::tiny_byte_model("prompt_file_run.gguf", false);
  const int n_vocab = model->config().n_vocab;
  const std::string file = ::testing::TempDir() + "/prompt_file_run.fasakv";
  std::filesystem::remove(file);
  const auto first = test::random_prompt(60, n_vocab, 1);
  auto longer = first;
  const auto tail = test::random_prompt(9, n_vocab, 2);
  longer.insert(longer.end(), tail.begin(), tail.end());
  const GenerateOptions go = test::greedy_options(6);
  std::vector<std::string> notes;
  const PromptFileNote note = [&](const std::string& line) { notes.push_back(line); };
  // (prompt, context, tokens reused): the file is written, reused whole, reused to its last
  // whole chunk, then too long for a 64-token context.
  struct Step {
    std::vector<int32_t> prompt;
    int n_ctx, reused;
  };
  for (const Step& step :
       {Step{first, 128, 0}, Step{first, 128, 60}, Step{longer, 128, 48}, Step{first, 64, 0}}) {
    Session want_s(model, test::tiny_session("full", step.n_ctx));
    const GenerateResult want = generate(want_s, step.prompt, go, nullptr);
    Session s(model, test::tiny_session("full", step.n_ctx));
    const PromptFileRun run = generate_with_prompt_file(
        file, s, step.prompt, go, [&] { return generate_from_prefilled(s, go, nullptr); }, note);
    EXPECT_EQ(run.reused, step.reused);
    EXPECT_EQ(run.result.tokens, want.tokens);
    const bool all = step.reused == static_cast<int>(step.prompt.size());
    EXPECT_EQ(run.result.n_prompt, all ? 0 : static_cast<int>(step.prompt.size()) - step.reused);
    // The file holds this prompt now (left as it was when it held all of it).
    EXPECT_EQ(peek_prompt_file(file).n_tokens, static_cast<int>(step.prompt.size()));
  }
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "prompt cache " + file +
                          " holds 69 tokens, more than this run's context of 64: not used (it "
                          "will hold this prompt)");
}

}  // namespace
}  // namespace fasa
