// `fasa run -m MODEL (-p TEXT | -f FILE) [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P]
//  [--seed S] [--ctx N] [--chat] [--system S] [--stop S]... [--threads T] [--kv-type f16|f32]
//  [--policy NAME[:k=v,...]] [--prompt-cache FILE]`
// Streams generated text to stdout; timing and memory statistics go to stderr.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>

#include "cli_common.h"
#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/prompt.h"
#include "fasa/engine/prompt_cache.h"
#include "fasa/engine/prompt_file.h"
#include "fasa/engine/session.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"

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
  SamplerParams sampler;
  int64_t seed = -1;  // -1: a random seed, printed so the run can be repeated
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

void print_stats(const RunArgs& a, const std::shared_ptr<const Model>& model, Session& session,
                 const GenerateResult& r);

// --prompt-cache FILE: starts `session` (fresh) from the prefix FILE saved, where the prompt
// cache's rules allow (engine/prompt_cache.h: a decode-time policy takes the common prefix, a
// prefill-aware one nothing, since the file holds no prefill statistics, except calib=online,
// which is shown the prompt queries the file saved with the prefix); returns the prompt
// tokens reused. No file yet: 0 (this run writes it). A file of another model or KV type: an
// error. A file of more tokens than this run's context: a note, 0 (this run rewrites it). Any
// other problem with the file is an error.
int start_from_prompt_file(const RunArgs& a, const std::shared_ptr<const Model>& model,
                           Session& session, const std::vector<int32_t>& prompt) {
  if (::access(a.prompt_cache.c_str(), F_OK) != 0) return 0;
  const PromptFileInfo info = peek_prompt_file(a.prompt_cache);
  check_prompt_file_for(info, a.prompt_cache, session);  // before anything may overwrite it
  if (info.n_tokens > session.n_ctx()) {
    if (!a.quiet) {
      std::fprintf(stderr,
                   "fasa: prompt cache %s holds %d tokens, more than this run's context of %d: "
                   "not used (it will hold this prompt)\n",
                   a.prompt_cache.c_str(), info.n_tokens, session.n_ctx());
    }
    return 0;
  }
  SessionOptions full = session.options();
  full.policy = "full";
  auto src = std::make_unique<Session>(model, full, session.policy_ctx());
  std::unique_ptr<QueryWindow> queries;  // an online-calibrated policy's, if it saved them
  std::vector<int32_t> saved = load_prompt_file(a.prompt_cache, *src, &queries);
  PromptCache cache(UINT64_MAX);
  cache.adopt(std::move(src), std::move(saved));
  const int reused = cache.start(session, prompt);
  if (queries && reused > 0) session.replay_prefill_queries(*queries, reused);
  return reused;
}
void print_kv_reads(const RunArgs& a, Session& session);
void print_summary(Session& session, const GenerateResult& r);

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
  if (a.seed < -1) fail("--seed must be >= 0, or -1 for a random seed (got {})", a.seed);
  a.sampler.seed = a.seed >= 0 ? static_cast<uint64_t>(a.seed) : std::random_device{}();
  a.sampler.validate();
  const LosslessOptions lossless = parse_lossless(a.lossless);
  apply_threads(a.threads);
  const std::string text = a.has_file ? read_text_file(a.file) : a.prompt;
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
  go.sampler = a.sampler;
  go.stop = a.stop;
  if (!a.quiet) go.prefill_progress = prefill_progress();
  if (!a.quiet && a.sampler.temp > 0) {
    std::fprintf(stderr, "fasa: seed %llu%s\n", static_cast<unsigned long long>(a.sampler.seed),
                 a.seed < 0 ? " (random; --seed repeats a run)" : "");
  }
  LosslessStats ls;
  const auto on_text = [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  GenerateResult r;
  if (a.prompt_cache.empty()) {
    r = generate_lossless(session, prompt, go, lossless, on_text, &ls);
  } else {
    if (session.cache().tiered()) {
      fail("--prompt-cache: a tiered (FASA-M) KV cache cannot be saved or restored");
    }
    const int reused = start_from_prompt_file(a, model, session, prompt);
    const auto decode = [&] { return generate_lossless(session, go, lossless, on_text, &ls); };
    if (reused == static_cast<int>(prompt.size())) {
      r = decode();
      r.n_prompt = 0;  // nothing prefilled
      r.prefill_ms = 0.0;
    } else {
      const std::vector<int32_t> rest(prompt.begin() + reused, prompt.end());
      r = prefill_then(session, rest, go, [&] {
        if (!session.cache().any_evicted()) save_prompt_file(a.prompt_cache, session, prompt);
        return decode();
      });
    }
    if (!a.quiet) {
      std::fprintf(stderr, "fasa: prompt cache %s: %d of %zu prompt tokens reused\n",
                   a.prompt_cache.c_str(), reused, prompt.size());
    }
  }
  std::printf("\n");
  std::fflush(stdout);
  if (a.quiet) return;
  print_stats(a, model, session, r);
  if (lossless.k > 0) {
    std::fprintf(stderr, "fasa: %s\n", lossless_summary(a.lossless, ls).c_str());
  }
}

// Timing, memory, and what the policy read: to stderr.
void print_stats(const RunArgs& a, const std::shared_ptr<const Model>& model, Session& session,
                 const GenerateResult& r) {
  const int n_gen = static_cast<int>(r.tokens.size());
  std::fprintf(stderr,
               "\nfasa: prompt %d tokens in %.1f ms (%.1f tok/s); generated %d tokens in %.1f ms "
               "(%.1f tok/s); stop: %s\n",
               r.n_prompt, r.prefill_ms,
               r.n_prompt > 0 ? r.n_prompt * 1000.0 / std::max(r.prefill_ms, 1e-9) : 0.0, n_gen,
               r.decode_ms, n_gen > 0 ? n_gen * 1000.0 / std::max(r.decode_ms, 1e-9) : 0.0,
               name(r.stop_reason));
  std::fprintf(stderr,
               "fasa: threads %d; context %d; KV cache %s (%s used of %s); weights %s; peak RSS "
               "%s\n",
               num_threads(), session.n_ctx(), kv_type_name(session.cache().type()),
               human_bytes(session.cache().used_bytes()).c_str(),
               human_bytes(session.cache().capacity_bytes()).c_str(),
               human_bytes(model->weight_bytes()).c_str(), human_bytes(peak_rss_bytes()).c_str());
  if (const std::string by_type = kv_by_layer_type(session.cache()); !by_type.empty()) {
    std::fprintf(stderr, "fasa: KV by layer type: %s\n", by_type.c_str());
  }
  print_kv_reads(a, session);
  if (const OnlineCalibrationInfo* oc = session.facets().online_calibration()) {
    std::fprintf(stderr, "fasa: %s\n", online_calibration_text(*oc, r.prefill_ms).c_str());
  }
  print_summary(session, r);
}

// One line a user reads first: the policy's KV bytes per generated token against full
// attention's, and the decode speed (without a one-time online calibration, said apart).
void print_summary(Session& session, const GenerateResult& r) {
  const AttnStats& st = session.attn_stats();
  const int n_gen = static_cast<int>(r.tokens.size());
  if (st.decode_tokens == 0 || st.dense_bytes == 0 || n_gen == 0) return;
  const std::string name(session.policy().name());
  const OnlineCalibrationInfo* oc = session.facets().online_calibration();
  const double calib_ms = oc && oc->done && !oc->reused ? oc->seconds * 1000.0 : 0.0;
  const std::string after =
      calib_ms > 0.0
          ? fmt::format(" after a one-time online calibration of {:.2f} s", calib_ms / 1000.0)
          : std::string();
  std::fprintf(stderr,
               "fasa: summary: %s read %.1f%% of full attention's KV bytes per generated token "
               "(%s instead of %s), decoding %.1f tokens/s%s\n",
               name.c_str(), 100.0 * st.bytes_read() / st.dense_bytes,
               human_bytes(st.bytes_read() / st.decode_tokens).c_str(),
               human_bytes(st.dense_bytes / st.decode_tokens).c_str(),
               n_gen * 1000.0 / std::max(r.decode_ms - calib_ms, 1e-9), after.c_str());
}

// The share of K/V rows the policy read, the bytes per decoded token, and the file tier's reads.
void print_kv_reads(const RunArgs& a, Session& session) {
  const AttnStats& st = session.attn_stats();
  if (st.slots_visible > 0) {
    const AttnShape& sh = session.cache().shape();
    const int n_global = static_cast<int>(sh.global_layers().size());
    if (n_global < sh.n_layers) {  // hybrid: the policy drives the global layers only
      int window = 0;
      for (int l = 0; l < sh.n_layers; ++l) window = std::max(window, sh.window(l));
      std::fprintf(stderr,
                   "fasa: policy %s read %.1f%% of the cached K/V rows of the %d global layers "
                   "at decode steps; the %d sliding-window layers read their window (up to %d "
                   "rows)\n",
                   session.options().policy.c_str(), 100.0 * st.global_read_fraction(), n_global,
                   sh.n_layers - n_global, window);
    } else {
      std::fprintf(stderr, "fasa: policy %s read %.1f%% of the cached K/V rows at decode steps\n",
                   session.options().policy.c_str(), 100.0 * st.slots_read / st.slots_visible);
    }
    const double per_tok = static_cast<double>(st.bytes_read()) / st.decode_tokens;
    const std::string window_part =
        st.window_bytes > 0
            ? ", of which sliding-window layers " + human_bytes(st.window_bytes / st.decode_tokens)
            : std::string();
    std::fprintf(stderr,
                 "fasa: KV bytes read per decoded token %s (selection %s + attention %s%s; dense "
                 "%s); KV resident in RAM: cache %s + policy side data %s\n",
                 human_bytes(static_cast<uint64_t>(per_tok)).c_str(),
                 human_bytes(st.select_bytes / st.decode_tokens).c_str(),
                 human_bytes(st.attend_bytes / st.decode_tokens).c_str(), window_part.c_str(),
                 human_bytes(st.dense_bytes / st.decode_tokens).c_str(),
                 human_bytes(session.cache().ram_bytes()).c_str(),
                 human_bytes(session.policy().resident_bytes()).c_str());
    if (const uint64_t evicted = session.facets().evicted_rows(); evicted > 0) {
      std::fprintf(stderr,
                   "fasa: the policy evicted %llu K/V rows for good; the cache freed %llu of them "
                   "(it frees them in batches)\n",
                   static_cast<unsigned long long>(evicted),
                   static_cast<unsigned long long>(session.cache().freed_rows()));
    }
  }
  if (session.cache().tiered()) {
    const uint64_t toks = std::max<uint64_t>(st.decode_tokens, 1);
    std::fprintf(stderr,
                 "fasa: KV file tier: %s on disk (%s); read per decoded token %s in %.2f ms "
                 "(%.1f reads)\n",
                 human_bytes(session.cache().file_bytes()).c_str(),
                 session.cache().direct_io() ? "direct I/O"
                                             : "buffered I/O, pages dropped after each access",
                 human_bytes(st.tier_read_bytes / toks).c_str(), st.tier_read_ns / 1e6 / toks,
                 static_cast<double>(st.tier_reads) / toks);
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "generate text from a prompt");
  cmd->add_option("-m,--model", a->model, "GGUF path or pulled model name")->required();
  auto* p = cmd->add_option("-p,--prompt", a->prompt, "prompt text");
  auto* f = cmd->add_option("-f,--file", a->file, "read the prompt from a file");
  cmd->add_option("-n,--n-predict", a->n_predict, "tokens to generate (-1: until EOS)")
      ->capture_default_str();
  cmd->add_option("--temp", a->sampler.temp, "temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--top-k", a->sampler.top_k, "top-k (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", a->sampler.top_p, "top-p (1 = off)")->capture_default_str();
  cmd->add_option("--min-p", a->sampler.min_p, "min-p (0 = off)")->capture_default_str();
  cmd->add_option("-s,--seed", a->seed, "sampling seed (-1: random, printed with --temp > 0)")
      ->capture_default_str();
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
