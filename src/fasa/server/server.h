// `fasa serve`: the OpenAI-compatible HTTP API over one model. Routes requests (the endpoints
// are the rows of routes.h's table: completions, chat completions, models, health, metrics,
// tokenize, ...), checks the API key, turns a request into a Job for the Scheduler and streams
// or returns its answer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fasa/model/model.h"
#include "fasa/server/api.h"
#include "fasa/server/http.h"
#include "fasa/server/metrics.h"
#include "fasa/server/policy_choice.h"
#include "fasa/server/prompt_scorer.h"
#include "fasa/server/routes.h"
#include "fasa/server/scheduler.h"

namespace fasa::server {

struct ServerConfig {
  http::ServerOptions http;
  SchedulerOptions scheduler;
  PolicyDefaults policy;
  std::string model_id;  // the name clients use ("model" field); others are refused with 404
  // Bearer keys a caller must send one of (none: no authentication). Each key is a tenant of
  // its own: prompt-cache entries are reused only by requests with the same key (and the same
  // cache_salt), unless prompt_cache_shared.
  std::vector<std::string> api_keys;
  bool prompt_cache_shared = false;  // one tenant: every key reuses every entry of its salt
  int max_tokens = 1024;             // the most tokens a request may ask for, and the default
  // One stderr line per request (peer, method, path, status, seconds, tokens, policy, ignored
  // fields); /health and /metrics are not logged.
  bool log_requests = true;
  // Origins whose web pages may call the API (cors.h): "scheme://host[:port]" each, or "*" for
  // any; empty: no CORS headers, and OPTIONS is a wrong method.
  std::vector<std::string> cors_origins;
};

// Token ids as the texts a logprobs answer shows (the token's bytes).
struct LogprobRenderer {
  const Tokenizer& tok;
  void append(const std::vector<TokenLogprob>& in, std::vector<LogprobEntry>& out) const;
};

class ApiServer {
 public:
  ApiServer(std::shared_ptr<const Model> model, const ServerConfig& config);
  ~ApiServer();
  void start();  // binds (fasa::Error if it cannot) and serves on background threads
  void stop();
  // A graceful stop's first half (http::Server::drain): no new connections, idle ones closed,
  // requests in flight answered in full; open_connections() then falls to 0.
  void drain() { http_->drain(); }
  int open_connections() const { return http_->open_connections(); }
  int port() const { return http_->port(); }
  SchedulerStats stats() const { return scheduler_->stats(); }

 private:
  friend const std::vector<Route>& api_routes();  // the table names the handlers below

  void handle(const http::Request& req, http::ResponseWriter& w);
  // Each returns a note for the request's log line. `r`: the request path's row, or nullptr.
  std::string route(const http::Request& req, http::ResponseWriter& w, const Route* r);
  // OPTIONS on a route's path with CORS on: 204 (with the preflight's headers when the Origin is
  // allowed), 403 for an Origin that is not.
  std::string preflight(const http::Request& req, http::ResponseWriter& w, const Route& r);
  // The handlers of the route table's rows (routes.cpp); RouteHandler says what they get.
  std::string serve_health(const http::Request& req, http::ResponseWriter& w, int who);
  std::string serve_metrics(const http::Request& req, http::ResponseWriter& w, int who);
  std::string serve_models(const http::Request& req, http::ResponseWriter& w, int who);
  std::string serve_model(const http::Request& req, http::ResponseWriter& w, int who);
  std::string serve_tokenizer_info(const http::Request& req, http::ResponseWriter& w, int who);
  std::string serve_tokenize(const http::Request& req, http::ResponseWriter& w, int who);
  std::string serve_detokenize(const http::Request& req, http::ResponseWriter& w, int who);
  std::string serve_completions(const http::Request& req, http::ResponseWriter& w, int who);
  std::string serve_chat(const http::Request& req, http::ResponseWriter& w, int who);
  // A completion request, step by step: check, tokenize, submit, answer (server.cpp).
  // `who`: caller()'s answer for the request.
  std::string generate(const http::Request& req, http::ResponseWriter& w, Endpoint endpoint,
                       int who);
  GenRequest checked_request(const http::Request& req, Endpoint endpoint) const;
  std::vector<int32_t> prompt_tokens(const GenRequest& r, Endpoint endpoint) const;
  void check_against_model(const GenRequest& r) const;
  GenerateOptions generate_options(const GenRequest& r, const std::vector<int32_t>& prompt) const;
  std::vector<LogprobEntry> score_prompt(const std::vector<int32_t>& prompt, int top,
                                         const LogprobRenderer& lp, const std::string& scope);
  GenOutcome outcome_of(Endpoint endpoint, const std::string& policy);
  std::string echo_metrics();  // the scorer's families (metrics.h)
  // Which API key the request carries: its index, kNoKeys when the server has none, -1 when
  // the request has none of them.
  static constexpr int kNoKeys = -2;
  int caller(const http::Request& req) const;
  // The prompt-cache scope of a caller and a request's cache_salt (engine/prompt_cache.h).
  std::string cache_scope(int caller, const std::string& salt) const;

  std::shared_ptr<const Model> model_;
  ServerConfig config_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<http::Server> http_;
  RequestCounters counters_;
  LatencyHistograms latency_;
  std::mutex score_mu_;                   // one prompt scored (echo with logprobs) at a time
  std::unique_ptr<PromptScorer> scorer_;  // under score_mu_
  std::atomic<uint64_t> next_id_{1};
  std::atomic<bool> stopping_{false};  // stop() was called: answers cut now are the server's doing
  int64_t started_ = 0;                // unix seconds, the models' "created"
  std::string calib_name_, calib_sha256_;  // --calib as answers show it
};

// Constant-time comparison (the API key): the time taken depends on the lengths only.
bool equal_constant_time(const std::string& a, const std::string& b);

}  // namespace fasa::server
