// Generation through a prompt file (engine/prompt_file.h; `fasa run --prompt-cache FILE`): the
// session starts from the prefix the file saved, where the prompt cache's rules allow
// (engine/prompt_cache.h: a decode-time policy takes the common prefix, a prefill-aware one
// nothing, since the file holds no prefill statistics, except calib=online, which is shown the
// prompt queries the file saved with the prefix); the rest of the prompt is prefilled, the file
// rewritten with this prompt's state, and the generation decoded from there.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fasa/engine/generate.h"
#include "fasa/engine/session.h"

namespace fasa {

// A line for the user (no "fasa: " prefix, no newline); may be null.
using PromptFileNote = std::function<void(const std::string&)>;

// Starts `session` (fresh) from the prefix `path` saved; returns the prompt tokens reused. No
// file yet: 0 (the run writes it). A file of another model or KV type: fasa::Error. A file of
// more tokens than the session's context: a note, 0 (the run rewrites it). Any other problem
// with the file is an error.
int start_from_prompt_file(const std::string& path, Session& session,
                           const std::vector<int32_t>& prompt, const PromptFileNote& note);

struct PromptFileRun {
  GenerateResult result;
  int reused = 0;  // prompt tokens restored from the file, not prefilled
};

// start_from_prompt_file, then the rest of `prompt` prefilled (opts.prefill_progress) and saved
// to `path` (unless the cache freed rows), then decode()'s result: a generation from the
// prefilled session (generate_from_prefilled, or generate_lossless). When the file held the whole
// prompt nothing is prefilled (n_prompt and prefill_ms 0) and the file is left as it is. A tiered
// (FASA-M) cache is refused (fasa::Error): it cannot be saved or restored.
PromptFileRun generate_with_prompt_file(const std::string& path, Session& session,
                                        const std::vector<int32_t>& prompt,
                                        const GenerateOptions& opts,
                                        const std::function<GenerateResult()>& decode,
                                        const PromptFileNote& note);

}  // namespace fasa
