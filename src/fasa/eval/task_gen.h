// RULER-style long-context task generators on real text (Hsieh et al., "RULER: What's the Real
// Context Size of Your Long-Context Language Models?", COLM 2024): the kinds, their prompts and
// answers, and prompts sized to the context with the model's own tokenizer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fasa/eval/tasks.h"

namespace fasa {

struct TaskGenOptions {
  std::string kind;  // one of task_kinds()
  int n_ctx = 4096;  // prompt tokens + max_new_tokens <= n_ctx, as close as the words allow
  int count = 25;    // tasks to make
  uint64_t seed = 1;
};

struct GeneratedTask {
  Task task;
  int n_prompt_tokens = 0;  // as `count_tokens` measured the prompt
};

const std::vector<std::string>& task_kinds();
// Throws fasa::Error naming the known kinds when `kind` is not one of them.
void check_task_kind(const std::string& kind);

// `haystack_text` is the real text the context is cut from (named `haystack_name` in errors);
// `count_tokens` measures a prompt the way the runner will (e.g. BOS + tokens, or the chat
// rendering). Throws fasa::Error for an unknown kind, a count < 1, or a context too small for
// the kind (saying how many tokens its fixed part needs). `progress(done, total)` may be null.
std::vector<GeneratedTask> generate_tasks(
    const TaskGenOptions& opts, const std::string& haystack_text, const std::string& haystack_name,
    const std::function<int64_t(const std::string&)>& count_tokens,
    const std::function<void(int, int)>& progress);

}  // namespace fasa
