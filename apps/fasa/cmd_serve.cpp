// `fasa serve -m MODEL [--host H] [--port P] [--ctx N] [--parallel N] [--queue N] [--threads T]
//  [--api-key KEY]... [--api-key-file FILE] [--prompt-cache-shared] [--max-tokens N] [--max-body BYTES] [--model-id NAME] [--kv-type f16|f32]
//  [--max-conns N] [--max-conns-per-client N] [--request-timeout S] [--idle-timeout S]
//  [--drain-timeout S] [--cors-origin ORIGIN]... [policy flags]`
// The OpenAI-compatible HTTP server (docs/SERVER.md). Runs until SIGINT or SIGTERM, then drains
// (answers what it holds, takes nothing new) for up to --drain-timeout; a second signal stops it
// at once.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli_common.h"
#include "commands.h"
#include "fasa/attention/calibration_store.h"
#include "fasa/core/error.h"
#include "fasa/core/input_file.h"
#include "fasa/core/parallel.h"
#include "fasa/server/cors.h"
#include "fasa/server/server.h"

namespace fasa::cli {

namespace {

struct ServeArgs {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  int n_ctx = 0;
  int parallel = 4;
  int queue = 32;
  int threads = 0;
  std::vector<std::string> api_keys;  // --api-key, repeatable
  std::string api_key_file;           // one key per line
  bool prompt_cache_shared = false;
  int max_tokens = 1024;
  size_t max_body = 1 << 20;
  std::string model_id;
  std::string kv_type = "f16";
  int64_t prompt_cache_mib = 1024;  // the prompt cache's budget (0: off)
  int max_conns = 0;                // 0: max(64, 4 * (parallel + queue))
  int max_conns_per_client = 32;
  double request_timeout = 10;            // seconds
  double idle_timeout = 30;               // seconds
  double drain_timeout = 30;              // seconds (0: stop at once)
  std::vector<std::string> cors_origins;  // --cors-origin, repeatable
  PolicyArgs policy;
};

// A timeout flag in seconds as milliseconds (at least 1).
int timeout_ms(const char* flag, double seconds) {
  if (!(seconds > 0 && seconds <= 86400)) {
    fail("{} must be a number of seconds in (0, 86400] (got {})", flag, seconds);
  }
  return std::max(1, static_cast<int>(std::lround(seconds * 1000)));
}

// The name clients send as "model": the registry name when given one, else the file's stem.
std::string model_id_of(const std::string& model_arg) {
  if (std::filesystem::exists(model_arg)) {
    return std::filesystem::path(model_arg).stem().string();
  }
  return model_arg;
}

// A graceful stop: no new connections, idle ones closed, the answers in flight given in full;
// returns once every connection has ended, `seconds` have passed, or another stop signal came.
void drain(server::ApiServer& srv, const char* signal_name, double seconds,
           const sigset_t& stop_signals) {
  srv.drain();
  std::fprintf(stderr,
               "fasa: %s received: draining (no new connections; the %d open ones end after "
               "their answers, within %g s; another signal stops at once)\n",
               signal_name, srv.open_connections(), seconds);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (srv.open_connections() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::fprintf(stderr, "fasa: drain time over with %d connections open\n",
                   srv.open_connections());
      return;
    }
    const timespec tick{0, 20 * 1000 * 1000};  // 20 ms
    if (sigtimedwait(&stop_signals, nullptr, &tick) > 0) {
      std::fprintf(stderr, "fasa: second stop signal: %d connections cut\n",
                   srv.open_connections());
      return;
    }
  }
  std::fprintf(stderr, "fasa: drained: every answer given\n");
}

// The keys of --api-key, --api-key-file (a line each; blank lines and '#' comments skipped,
// spaces around a key trimmed) and, when neither is given, $FASA_API_KEY.
std::vector<std::string> api_keys_of(const ServeArgs& a) {
  std::vector<std::string> keys;
  for (const std::string& k : a.api_keys) {
    if (k.empty()) fail("--api-key must not be empty");
    keys.push_back(k);
  }
  if (!a.api_key_file.empty()) {
    const std::string text = read_input_file(a.api_key_file, "API key file");
    size_t n_file = 0;
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(at, end - at);
      at = end + 1;
      const size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
      if (b == std::string::npos || line[b] == '#') continue;
      line = line.substr(b, e - b + 1);
      for (const char c : line) {
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
          fail("--api-key-file '{}': a key holds a space or control byte", a.api_key_file);
        }
      }
      keys.push_back(line);
      ++n_file;
    }
    if (n_file == 0) fail("--api-key-file '{}' holds no key", a.api_key_file);
  }
  if (keys.empty()) {
    if (const char* env = std::getenv("FASA_API_KEY"); env && env[0] != '\0') keys.push_back(env);
  }
  return keys;
}

// 127.0.0.0/8, ::1 and "localhost": reachable from this machine only.
bool loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

void run_serve(const ServeArgs& a) {
  if (a.port < 0 || a.port > 65535) fail("--port must be in [0, 65535] (got {})", a.port);
  apply_threads(a.threads);
  const std::vector<std::string> api_keys = api_keys_of(a);
  server::ServerConfig cfg;
  cfg.http.host = a.host;
  cfg.http.port = a.port;
  cfg.http.max_body_bytes = a.max_body;
  if (a.max_conns < 0) fail("--max-conns must be >= 0 (got {})", a.max_conns);
  if (a.max_conns_per_client < 0) {
    fail("--max-conns-per-client must be >= 0 (got {})", a.max_conns_per_client);
  }
  cfg.http.max_connections =
      a.max_conns > 0 ? a.max_conns : std::max(64, 4 * (a.parallel + a.queue));
  cfg.http.max_connections_per_client = a.max_conns_per_client;
  cfg.http.request_timeout_ms = timeout_ms("--request-timeout", a.request_timeout);
  cfg.http.idle_timeout_ms = timeout_ms("--idle-timeout", a.idle_timeout);
  if (!(a.drain_timeout >= 0 && a.drain_timeout <= 86400)) {
    fail("--drain-timeout must be a number of seconds in [0, 86400] (got {})", a.drain_timeout);
  }
  cfg.scheduler.parallel = a.parallel;
  cfg.scheduler.max_queue = a.queue;
  if (a.prompt_cache_mib < 0) fail("--prompt-cache-mib must be >= 0 (got {})", a.prompt_cache_mib);
  cfg.scheduler.prompt_cache_bytes = static_cast<uint64_t>(a.prompt_cache_mib) << 20;
  cfg.scheduler.session.n_ctx = a.n_ctx;
  cfg.scheduler.session.kv_type = parse_kv_type(a.kv_type);
  // --calib serves every calibrated policy a request picks; it joins the default spec only when
  // the default policy is calibrated itself.
  PolicyArgs def = a.policy;
  if (!policy_takes_calibration(def.policy.substr(0, def.policy.find(':')))) def.calib.clear();
  cfg.policy.spec = def.spec();
  cfg.policy.calib = a.policy.calib;
  cfg.model_id = a.model_id.empty() ? model_id_of(a.model) : a.model_id;
  cfg.api_keys = api_keys;
  cfg.prompt_cache_shared = a.prompt_cache_shared;
  cfg.max_tokens = a.max_tokens;
  server::check_cors_origins(a.cors_origins);  // before the model loads
  cfg.cors_origins = a.cors_origins;

  // Block the stop signals before any thread starts, so every thread inherits the mask and
  // this one receives them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto model = load_model(a.model);
  // No --calib: the calibration stored for this model file, if any, serves calibrated policies.
  cfg.policy.spec = resolved_spec(cfg.policy.spec, model);
  if (cfg.policy.calib.empty()) {
    cfg.policy.calib = find_stored_calibration(model->sha256());
    if (!cfg.policy.calib.empty()) {
      std::fprintf(stderr, "fasa: calibration for calibrated policies requests pick: stored %s\n",
                   cfg.policy.calib.c_str());
    }
  }
  server::ApiServer srv(model, cfg);
  srv.start();
  std::fprintf(stderr,
               "fasa: serving '%s' on http://%s:%d (context %d, %d parallel sequences, queue "
               "%d, policy %s, threads %d%s); Ctrl-C stops\n",
               cfg.model_id.c_str(), a.host.c_str(), srv.port(),
               resolve_context(model->config(), a.n_ctx), a.parallel, a.queue,
               cfg.policy.spec.c_str(), num_threads(),
               api_keys.empty()       ? ""
               : api_keys.size() == 1 ? ", API key set"
                                      : fmt::format(", {} API keys", api_keys.size()).c_str());
  if (api_keys.empty() && !loopback_host(a.host)) {
    std::fprintf(stderr,
                 "fasa: warning: serving beyond loopback (%s) without an API key: anyone who "
                 "can reach this address can use the server (set --api-key or "
                 "--api-key-file)\n",
                 a.host.c_str());
  }
  std::fflush(stderr);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  const char* name = sig == SIGINT ? "SIGINT" : "SIGTERM";
  if (a.drain_timeout > 0) drain(srv, name, a.drain_timeout, stop_signals);
  std::fprintf(stderr, "fasa: stopping\n");
  srv.stop();
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (docs/SERVER.md)");
  cmd->add_option("-m,--model", a->model, "GGUF path or pulled model name")->required();
  cmd->add_option("--host", a->host, "address to bind (loopback unless told otherwise)")
      ->capture_default_str();
  cmd->add_option("--port", a->port, "port (0 = any free port)")->capture_default_str();
  cmd->add_option("-c,--ctx,--ctx-size", a->n_ctx,
                  "context per sequence in tokens (0 = min(model, 4096))")
      ->capture_default_str();
  cmd->add_option("--parallel", a->parallel, "sequences generating at once (batched)")
      ->capture_default_str();
  cmd->add_option("--queue", a->queue, "requests waiting for a slot; more get 503")
      ->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--api-key", a->api_keys,
                  "require 'Authorization: Bearer KEY' (repeatable: one key per tenant; or set "
                  "FASA_API_KEY)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--api-key-file", a->api_key_file,
                  "file of API keys, one per line ('#' comments), as --api-key");
  cmd->add_flag("--prompt-cache-shared", a->prompt_cache_shared,
                "one tenant: requests of every API key reuse each other's cached prompts "
                "(default: only their own key's; a request's cache_salt always separates)");
  cmd->add_option("--max-tokens", a->max_tokens,
                  "the most tokens a request may generate, and the default")
      ->capture_default_str();
  cmd->add_option("--max-body", a->max_body, "largest request body in bytes")
      ->capture_default_str();
  cmd->add_option("--model-id", a->model_id, "model name clients use (default: -m's name)");
  cmd->add_option("--kv-type", a->kv_type, "KV cache type: f16, f32 or q8_0")
      ->capture_default_str();
  cmd->add_option("--prompt-cache-mib", a->prompt_cache_mib,
                  "MiB of prefilled prompts kept for requests that start the same way (0 = off)")
      ->capture_default_str();
  cmd->add_option("--max-conns", a->max_conns,
                  "open connections, all clients together (0 = max(64, 4 x (parallel + queue)))")
      ->capture_default_str();
  cmd->add_option("--max-conns-per-client", a->max_conns_per_client,
                  "open connections from one IP address; more get 429 (0 = no limit)")
      ->capture_default_str();
  cmd->add_option("--request-timeout", a->request_timeout,
                  "seconds a request (headers + body) may take to arrive; more: 408")
      ->capture_default_str();
  cmd->add_option("--idle-timeout", a->idle_timeout,
                  "seconds a keep-alive connection may wait for its next request")
      ->capture_default_str();
  cmd->add_option("--drain-timeout", a->drain_timeout,
                  "on SIGTERM or SIGINT: seconds to finish the answers in flight, taking no new "
                  "connections, before stopping (0 = stop at once; a second signal stops at once)")
      ->capture_default_str();
  cmd->add_option("--cors-origin", a->cors_origins,
                  "let web pages of this origin (scheme://host[:port], or '*' for any) call the "
                  "API from a browser (repeatable; default: none)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  add_policy_options(cmd, a->policy);
  cmd->callback([a] { run_serve(*a); });
}

}  // namespace fasa::cli
