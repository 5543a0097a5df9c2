// Long-context task evaluation:
//   fasa eval tasks -m MODEL --tasks FILE.jsonl [policy flags] [--compare SPEC]... [--chat] [--json]
//   fasa gen-tasks -m MODEL --kind K --haystack FILE --ctx N --n COUNT --seed S -o FILE.jsonl
#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/eval/task_gen.h"
#include "fasa/eval/task_json.h"
#include "fasa/eval/task_runner.h"
#include "fasa/io/atomic_file.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"
#include "provenance.h"

namespace fasa::cli {

namespace {

struct TasksArgs {
  std::string model, tasks;
  TaskRunArgs run;  // -c, -t, -j, --kv-type, --chat
  bool json = false;
  PolicyArgs policy;
  std::string lossless = "off";
};

void print_lossless(const std::string& setting, const TaskRunResult& r) {
  std::printf("\n");
  for (size_t p = 0; p < r.policies.size(); ++p) {
    const LosslessTotals t = lossless_totals(r, p);
    std::printf("%s: %s; decode %.2f tok/s\n", r.policies[p].c_str(),
                lossless_summary(setting, t.st).c_str(), t.tokens_per_s());
  }
}

// Each policy's score, then its partial credit in parentheses when they differ anywhere.
void print_cells(const std::vector<double>& score, const std::vector<double>& partial,
                 bool show_partial) {
  for (size_t p = 0; p < score.size(); ++p) {
    if (show_partial) {
      std::printf(" %.3f (%.3f) |", score[p], partial[p]);
    } else {
      std::printf(" %.3f |", score[p]);
    }
  }
  std::printf("\n");
}

void print_table(const std::vector<Task>& tasks, const TaskRunResult& r, bool question) {
  const TaskScoreTable t = score_table(tasks, r);
  const TaskScoreTable pc = score_table(tasks, r, true);
  const bool multi = std::any_of(tasks.begin(), tasks.end(),
                                 [](const Task& x) { return x.metric == TaskMetric::All; });
  std::printf("%zu tasks, context %d tokens, greedy, %s (%.1f s, dense prefills %.1f s)\n%s\n",
              tasks.size(), r.n_ctx,
              question ? "question under the policy" : "dense prefill of the whole prompt",
              r.seconds, r.prefill_seconds,
              multi
                  ? "score (partial: the share of a task's answers found, RULER's partial credit)\n"
                  : "");
  std::printf("| task | n |");
  for (const auto& p : r.policies) std::printf(" %s |", p.c_str());
  std::printf("\n| --- | ---: |");
  for (size_t p = 0; p < r.policies.size(); ++p) std::printf(" ---: |");
  std::printf("\n");
  for (size_t k = 0; k < t.kinds.size(); ++k) {
    std::printf("| %s | %d |", t.kinds[k].c_str(), t.count[k]);
    print_cells(t.mean[k], pc.mean[k], multi);
  }
  std::printf("| **all tasks** | %zu |", tasks.size());
  print_cells(t.overall, pc.overall, multi);
  std::printf("| **mean of kinds** | %zu |", t.kinds.size());
  print_cells(t.kind_average, pc.kind_average, multi);
}

void run_tasks_cmd(const TasksArgs& a) {
  const LosslessOptions lossless = parse_lossless(a.lossless);
  apply_threads(a.run.threads);
  const std::vector<Task> tasks = load_tasks(a.tasks);
  auto model = load_model(a.model);
  TaskRunOptions o;
  o.policies = resolved_specs(a.policy.specs(), model);
  o.jobs = a.run.jobs;
  o.chat = a.run.chat;
  o.question_under_policy = a.run.question_under_policy;
  o.n_ctx = a.run.n_ctx;
  o.kv_type = parse_kv_type(a.run.kv_type);
  o.lossless = lossless;
  const TaskRunResult r = run_tasks(model, tasks, o, progress_printer("generations"));
  if (!a.json) {
    print_table(tasks, r, a.run.question_under_policy);
    if (lossless.k > 0) print_lossless(a.lossless, r);
    return;
  }
  nlohmann::ordered_json j;
  j["model"] = model->file().path();
  j["tasks_file"] = a.tasks;
  j["n_ctx"] = r.n_ctx;
  j["chat"] = a.run.chat;
  j["protocol"] = protocol_name(a.run.question_under_policy);
  j["kv_type"] = a.run.kv_type;
  j["seconds"] = r.seconds;
  j["lossless"] = lossless_name(lossless);
  add_provenance(j, model->file().path(), "", "", a.tasks);
  j["results"] = task_results_json(tasks, r, lossless.k > 0);
  j["items"] = task_items_json(tasks, r);
  std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

struct GenArgs {
  std::string model, kind, haystack, out;
  int n_ctx = 4096;
  int count = 25;
  uint64_t seed = 1;
  bool chat = false;
};

void run_gen(const GenArgs& a) {
  check_task_kind(a.kind);     // before reading files or loading the model
  AtomicFile out_file(a.out);  // fails now for a missing or read-only directory
  const std::string text = read_text_file(a.haystack);
  auto model = load_model(a.model);
  const Tokenizer& tok = model->require_tokenizer();
  std::function<int64_t(const std::string&)> count;
  if (a.chat) {
    const ChatFormat fmt = detect_chat_format(model->file());
    const std::string sys = chat_default_system(model->file());
    count = [&tok, fmt, sys](const std::string& p) {
      return static_cast<int64_t>(
          tok.encode(render_chat(fmt, {{"user", p}}, true, sys), true, true).size());
    };
  } else {
    count = [&tok](const std::string& p) {
      return static_cast<int64_t>(tok.encode(p, true, false).size());
    };
  }
  TaskGenOptions o;
  o.kind = a.kind;
  o.n_ctx = a.n_ctx;
  o.count = a.count;
  o.seed = a.seed;
  const auto tasks = generate_tasks(o, text, a.haystack, count, progress_printer("tasks"));
  std::string out;
  int lo = a.n_ctx, hi = 0;
  for (const auto& g : tasks) {
    out += task_to_json_line(g.task) + "\n";
    lo = std::min(lo, g.n_prompt_tokens + g.task.max_new_tokens);
    hi = std::max(hi, g.n_prompt_tokens + g.task.max_new_tokens);
  }
  out_file.write(out);
  out_file.commit();
  std::printf("wrote %zu %s tasks to %s: prompt + max_new_tokens = %d..%d of %d tokens%s\n",
              tasks.size(), a.kind.c_str(), a.out.c_str(), lo, hi, a.n_ctx,
              a.chat ? " (chat-wrapped)" : "");
}

}  // namespace

void add_tasks_commands(CLI::App& app, CLI::App* eval) {
  auto t = std::make_shared<TasksArgs>();
  auto* tc = eval->add_subcommand("tasks", "score generations on a JSONL task file");
  tc->add_option("-m,--model", t->model, "GGUF path or pulled model name")->required();
  tc->add_option("--tasks", t->tasks, "JSONL task file (fasa gen-tasks, or your own)")->required();
  add_task_run_options(tc, t->run);
  add_policy_options(tc, t->policy, /*with_compare=*/true);
  add_lossless_option(tc, t->lossless);
  tc->add_flag("--json", t->json, "print one JSON object (scores and every output)");
  tc->callback([t] { run_tasks_cmd(*t); });

  auto g = std::make_shared<GenArgs>();
  auto* gc =
      app.add_subcommand("gen-tasks", "generate RULER-style long-context tasks on real text");
  gc->add_option("-m,--model", g->model, "model whose tokenizer sizes the prompts")->required();
  std::string kinds;
  for (const std::string& k : task_kinds()) kinds += (kinds.empty() ? "" : ", ") + k;
  gc->add_option("--kind", g->kind, "the task kind: " + kinds)->required();
  gc->add_option("--haystack", g->haystack, "UTF-8 text the contexts are cut from")->required();
  gc->add_option("-c,--ctx,--ctx-size", g->n_ctx, "prompt + max_new_tokens fit this many tokens")
      ->capture_default_str();
  gc->add_option("--n", g->count, "tasks to generate")->capture_default_str();
  gc->add_option("--seed", g->seed, "random seed")->capture_default_str();
  gc->add_flag("--chat", g->chat, "size prompts as chat-wrapped (run them with --chat)");
  gc->add_option("-o,--out", g->out, "output JSONL file")->required();
  gc->callback([g] { run_gen(*g); });
}

}  // namespace fasa::cli
