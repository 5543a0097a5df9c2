// `fasa chat -m MODEL [-s SYSTEM] [-n N] [sampling flags] [policy flags] [-c N] [-t N]`: a
// conversation in the model's chat format that keeps the KV cache across turns (chat_repl.h).
// `fasa run -i` and `fasa run -cnv` are this command (llama_cpp_habits.h).
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "chat_repl.h"
#include "cli_common.h"
#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/engine/chat_turns.h"
#include "fasa/engine/session.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"
#include "sampling_options.h"

namespace fasa::cli {
namespace {

struct ChatArgs {
  std::string model;
  std::string system;
  int n_ctx = 0;
  int threads = 0;
  std::string kv_type = "f16";
  PolicyArgs policy;
  ChatSettings settings;
  bool verify = false;
};

void run_chat(ChatArgs& a) {
  if (a.settings.n_predict < -1) fail("-n must be >= -1 (got {})", a.settings.n_predict);
  if (a.n_ctx < 0) fail("--ctx must be >= 0 (got {})", a.n_ctx);
  resolve_sampling(a.settings.sampling);
  if (const int64_t bad = find_invalid_utf8(a.system); bad >= 0) {
    fail("--system is not valid UTF-8 (byte offset {})", bad);
  }
  apply_threads(a.threads);
  auto model = load_model(a.model, a.verify);
  ChatTurns turns = ChatTurns::for_model(*model, a.system);  // no chat format: an error now
  SessionOptions so;
  so.n_ctx = a.n_ctx;  // 0: the model's context, at most 4096
  so.kv_type = parse_kv_type(a.kv_type);
  so.policy = resolved_spec(a.policy.spec(), model, a.settings.quiet);
  Session session(model, so);
  if (!a.settings.quiet) {
    const ModelConfig& c = model->config();
    std::fprintf(stderr,
                 "fasa chat: %s (%s chat format), context %d tokens, policy %s, %d threads; "
                 "/help lists the commands, Ctrl-C stops an answer, Ctrl-D or /exit ends\n",
                 c.name.empty() ? c.arch.c_str() : c.name.c_str(), chat_format_name(turns.format()),
                 session.n_ctx(), so.policy.c_str(), num_threads());
    print_seed(a.settings.sampling);
  }
  const int status = run_chat_repl(session, turns, a.settings);
  std::fflush(stdout);
  if (status != 0) std::exit(status);  // Ctrl-C at the prompt: 130, as llama.cpp
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto a = std::make_shared<ChatArgs>();
  auto* cmd =
      app.add_subcommand("chat",
                         "talk with a model in its chat format, the KV cache kept across turns");
  cmd->add_option("-m,--model", a->model, "GGUF path or pulled model name")->required();
  cmd->add_option("-s,--system", a->system, "system message");
  cmd->add_option("-n,--n-predict", a->settings.n_predict,
                  "tokens per answer at most (-1: until the model ends its turn)")
      ->capture_default_str();
  add_sampling_options(cmd, a->settings.sampling, "--seed");
  cmd->add_option("--stop", a->settings.stop, "stop string (repeatable)");
  cmd->add_option("-c,--ctx,--ctx-size", a->n_ctx,
                  "context size in tokens, the whole conversation's (0 = the model's, at most "
                  "4096)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--kv-type", a->kv_type, "KV cache type: f16, f32 or q8_0")
      ->capture_default_str();
  add_policy_options(cmd, a->policy);
  cmd->add_flag("-q,--quiet", a->settings.quiet, "no statistics on stderr");
  cmd->add_flag("--verify", a->verify,
                "hash the pulled model against the sha256 recorded when it was pulled");
  cmd->callback([a] { run_chat(*a); });
}

}  // namespace fasa::cli
