// `fasa run -m MODEL (-p TEXT | -f FILE|-) [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P]
//  [--seed S] [--repeat-penalty F] [--repeat-last-n N] [--ctx N] [--chat] [--system S]
//  [--stop S]... [--threads T] [--kv-type f16|f32] [--policy NAME[:k=v,...]]
//  [--prompt-cache FILE]`; with -i/-cnv it is `fasa chat` (llama_cpp_habits.h).
// Streams generated text to stdout; timing and memory statistics go to stderr.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "cli_common.h"
#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/prompt.h"
#include "fasa/engine/prompt_file_run.h"
#include "fasa/engine/session.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"
#include "run_stats.h"
#include "sampling_options.h"

namespace fasa::cli {

namespace {

struct RunArgs {
  std::string model;
  std::string prompt;
  std::string file;
  bool has_prompt = false;
  bool has_file = false;
  int n_predict = 128;
  int n_ctx = 0;
  int threads = 0;
  bool chat = false;
  bool parse_special = false;
  std::string system;
  bool has_system = false;
  std::vector<std::string> stop;
  std::string kv_type = "f16";
  PolicyArgs policy;
  std::string lossless = "off";
  std::string prompt_cache;  // --prompt-cache FILE: a saved prefilled prompt, read and written
  bool quiet = false;
  bool verify = false;  // --verify: hash a pulled model before loading it
  SamplingArgs sampling;
};

// With no --ctx: the prompt plus the tokens to generate (-n -1: plus kUntilEosRoom), within the
// model's trained context.
constexpr int kUntilEosRoom = 4096;

int context_size(const RunArgs& a, const Model& model, size_t n_prompt) {
  const int64_t model_max = model.config().n_ctx_max();
  if (a.n_ctx > 0) return a.n_ctx;
  if (static_cast<int64_t>(n_prompt) >= model_max) {
    fail("prompt is {} tokens, as long as or longer than the model's context of {} tokens",
         n_prompt, model_max);
  }
  const int64_t room = a.n_predict < 0 ? kUntilEosRoom : std::max(a.n_predict, 1);
  return static_cast<int>(std::min<int64_t>(model_max, static_cast<int64_t>(n_prompt) + room));
}

// Prefill progress on stderr, from about one second in and only when stderr is a terminal.
std::function<void(int, int)> prefill_progress() {
  if (isatty(STDERR_FILENO) == 0) return nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  return [t0, shown = false](int done, int total) mutable {
    if (!shown && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1)) return;
    shown = true;
    std::fprintf(stderr, "\rfasa: prefill %d/%d tokens", done, total);
    if (done == total) std::fprintf(stderr, "\n");
  };
}

// The prompt's tokens: the text as given, or one user turn (after the system text, if any) in
// the model's chat format.
std::vector<int32_t> prompt_tokens(const RunArgs& a, const Model& model, const std::string& text) {
  std::vector<int32_t> prompt;
  if (a.chat) {
    std::vector<ChatMessage> msgs;
    if (a.has_system) msgs.push_back({"system", a.system});
    msgs.push_back({"user", text});
    prompt = chat_prompt_tokens(model, msgs, a.parse_special);
  } else {
    prompt = text_prompt_tokens(model, text, a.parse_special);
  }
  if (prompt.empty()) fail("the prompt is empty");
  return prompt;
}

void run_run(RunArgs& a) {
  if (a.has_prompt == a.has_file) fail("give exactly one of -p TEXT or -f FILE");
  if (a.n_predict < -1) fail("-n must be >= -1 (got {})", a.n_predict);
  resolve_sampling(a.sampling);
  const LosslessOptions lossless = parse_lossless(a.lossless);
  if (lossless.k > 0 && repeat_penalty_on(a.sampling)) {
    fail(
        "--repeat-penalty does not combine with --lossless (its drafts and verifications "
        "sample without penalties)");
  }
  apply_threads(a.threads);
  const std::string text = a.has_file ? read_text_or_stdin(a.file) : a.prompt;
  if (const int64_t bad = find_invalid_utf8(text); bad >= 0) {
    fail("prompt is not valid UTF-8 (byte offset {})", bad);
  }
  auto model = load_model(a.model, a.verify);
  const std::vector<int32_t> prompt = prompt_tokens(a, *model, text);

  SessionOptions so;
  so.n_ctx = context_size(a, *model, prompt.size());
  so.kv_type = parse_kv_type(a.kv_type);
  so.policy = resolved_spec(a.policy.spec(), model, a.quiet);
  Session session(model, so);
  if (static_cast<int>(prompt.size()) > session.n_ctx()) {
    fail("prompt is {} tokens, longer than the context of {} tokens (raise --ctx, up to {})",
         prompt.size(), session.n_ctx(), model->config().n_ctx_max());
  }
  GenerateOptions go;
  go.n_predict = a.n_predict;
  go.sampler = a.sampling.sampler;
  go.rules = sampling_rules(a.sampling, prompt);
  go.stop = a.stop;
  if (!a.quiet) go.prefill_progress = prefill_progress();
  if (!a.quiet) print_seed(a.sampling);
  LosslessStats ls;
  const auto on_text = [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  GenerateResult r;
  if (a.prompt_cache.empty()) {
    r = generate_lossless(session, prompt, go, lossless, on_text, &ls);
  } else {  // engine/prompt_file_run.h: restored, the rest prefilled, saved, then decoded
    const auto decode = [&] { return generate_lossless(session, go, lossless, on_text, &ls); };
    PromptFileNote note;
    if (!a.quiet) {
      note = [](const std::string& line) { std::fprintf(stderr, "fasa: %s\n", line.c_str()); };
    }
    const PromptFileRun run =
        generate_with_prompt_file(a.prompt_cache, session, prompt, go, decode, note);
    r = run.result;
    if (!a.quiet) {
      std::fprintf(stderr, "fasa: prompt cache %s: %d of %zu prompt tokens reused\n",
                   a.prompt_cache.c_str(), run.reused, prompt.size());
    }
  }
  std::printf("\n");
  std::fflush(stdout);
  if (a.quiet) return;
  print_run_stats(*model, session, r);
  if (lossless.k > 0) {
    std::fprintf(stderr, "fasa: %s\n", lossless_summary(a.lossless, ls).c_str());
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "generate text from a prompt");
  cmd->add_option("-m,--model", a->model, "GGUF path or pulled model name")->required();
  auto* p = cmd->add_option("-p,--prompt", a->prompt, "prompt text");
  auto* f = cmd->add_option("-f,--file", a->file, "read the prompt from a file (-: stdin)");
  cmd->add_option("-n,--n-predict", a->n_predict, "tokens to generate (-1: until EOS)")
      ->capture_default_str();
  add_sampling_options(cmd, a->sampling, "-s,--seed");
  cmd->add_option("-c,--ctx,--ctx-size", a->n_ctx,
                  "context size in tokens (0 = the prompt + -n, within the model's; -n -1: + 4096)")
      ->capture_default_str();
  cmd->add_flag("--chat", a->chat, "wrap the prompt in the model's chat format");
  auto* sys = cmd->add_option("--system", a->system, "system message for --chat");
  cmd->add_flag("--parse-special", a->parse_special,
                "special-token texts in the prompt (and --system) become those tokens, e.g. "
                "'<|im_end|>' (default: plain text)");
  cmd->add_option("--stop", a->stop, "stop string (repeatable)");
  cmd->add_option("-t,--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--kv-type", a->kv_type, "KV cache type: f16, f32 or q8_0")
      ->capture_default_str();
  add_policy_options(cmd, a->policy);
  add_lossless_option(cmd, a->lossless);
  cmd->add_option("--prompt-cache", a->prompt_cache,
                  "file of a prefilled prompt: reused where this prompt starts the same way, "
                  "then overwritten with this prompt's (created if missing)");
  cmd->add_flag("-q,--quiet", a->quiet, "no statistics on stderr");
  cmd->add_flag("--verify", a->verify,
                "hash the pulled model against the sha256 recorded when it was pulled before "
                "loading it (otherwise only when its size or mtime changed)");
  cmd->callback([a, p, f, sys] {
    a->has_prompt = p->count() > 0;
    a->has_file = f->count() > 0;
    a->has_system = sys->count() > 0;
    run_run(*a);
  });
}

}  // namespace fasa::cli
