#include "fasa/engine/prompt_file_run.h"

#include <unistd.h>

#include <cstdint>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "fasa/attention/online_calibration.h"
#include "fasa/core/error.h"
#include "fasa/engine/prompt_cache.h"
#include "fasa/engine/prompt_file.h"

namespace fasa {

int start_from_prompt_file(const std::string& path, Session& session,
                           const std::vector<int32_t>& prompt, const PromptFileNote& note) {
  if (::access(path.c_str(), F_OK) != 0) return 0;
  const PromptFileInfo info = peek_prompt_file(path);
  check_prompt_file_for(info, path, session);  // before anything may overwrite it
  if (info.n_tokens > session.n_ctx()) {
    if (note) {
      note(
          fmt::format("prompt cache {} holds {} tokens, more than this run's context of {}: not "
                      "used (it "
                      "will hold this prompt)",
                      path, info.n_tokens, session.n_ctx()));
    }
    return 0;
  }
  SessionOptions full = session.options();
  full.policy = "full";
  auto src = std::make_unique<Session>(session.model_ptr(), full, session.policy_ctx());
  std::unique_ptr<QueryWindow> queries;  // an online-calibrated policy's, if it saved them
  std::vector<int32_t> saved = load_prompt_file(path, *src, &queries);
  PromptCache cache(UINT64_MAX);
  cache.adopt(std::move(src), std::move(saved));
  const int reused = cache.start(session, prompt);
  if (queries && reused > 0) session.replay_prefill_queries(*queries, reused);
  return reused;
}

PromptFileRun generate_with_prompt_file(const std::string& path, Session& session,
                                        const std::vector<int32_t>& prompt,
                                        const GenerateOptions& opts,
                                        const std::function<GenerateResult()>& decode,
                                        const PromptFileNote& note) {
  if (session.cache().tiered()) {
    fail("--prompt-cache: a tiered (FASA-M) KV cache cannot be saved or restored");
  }
  PromptFileRun run;
  run.reused = start_from_prompt_file(path, session, prompt, note);
  if (run.reused == static_cast<int>(prompt.size())) {
    run.result = decode();
    run.result.n_prompt = 0;  // nothing prefilled
    run.result.prefill_ms = 0.0;
    return run;
  }
  const std::vector<int32_t> rest(prompt.begin() + run.reused, prompt.end());
  run.result = prefill_then(session, rest, opts, [&] {
    if (!session.cache().any_evicted()) save_prompt_file(path, session, prompt);
    return decode();
  });
  return run;
}

}  // namespace fasa
