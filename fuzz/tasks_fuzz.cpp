// Fuzz target: the task-file reader (eval/tasks.cpp, parse_tasks: what `fasa eval tasks` and
// `fasa eval sweep` read). Contract: any text either parses or throws fasa::Error; parsed tasks
// satisfy tasks.h (ids unique and non-empty, answers non-empty, max_new_tokens >= 1), each
// survives task_to_json_line -> parse_tasks unchanged, and every metric scores an output that
// is its answers 1.
#include <set>

#include "fasa/core/error.h"
#include "fasa/eval/tasks.h"
#include "fuzz_util.h"

namespace fasa::fuzz {
namespace {

bool same(const Task& a, const Task& b) {
  return a.id == b.id && a.task == b.task && a.prompt == b.prompt && a.answers == b.answers &&
         a.max_new_tokens == b.max_new_tokens && a.metric == b.metric;
}

void run(const uint8_t* data, size_t size) {
  std::vector<Task> tasks;
  try {
    tasks = parse_tasks(std::string(as_text(data, size)), "fuzz.jsonl");
  } catch (const Error&) {
    return;
  }
  FASA_FUZZ_EXPECT(!tasks.empty());
  std::set<std::string> ids;
  for (const Task& t : tasks) {
    FASA_FUZZ_EXPECT(!t.id.empty() && ids.insert(t.id).second);
    FASA_FUZZ_EXPECT(!t.answers.empty() && t.max_new_tokens >= 1);
    const std::vector<Task> again = parse_tasks(task_to_json_line(t), "again");
    FASA_FUZZ_EXPECT(again.size() == 1 && same(again[0], t));
    std::string all;
    for (const std::string& a : t.answers) all += a + " ";
    FASA_FUZZ_EXPECT(score_output(TaskMetric::Exact, t.answers[0], t.answers) == 1.0);
    FASA_FUZZ_EXPECT(score_output(TaskMetric::Contains, t.answers.back(), t.answers) == 1.0);
    FASA_FUZZ_EXPECT(score_output(TaskMetric::All, all, t.answers) == 1.0);
    const double s = score_output(t.metric, t.prompt, t.answers);
    FASA_FUZZ_EXPECT(s == 0.0 || s == 1.0);
  }
}

}  // namespace
}  // namespace fasa::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fasa::fuzz::run(data, size);
  return 0;
}
