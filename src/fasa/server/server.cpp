#include "fasa/server/server.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>

#include <fmt/format.h>

#include "fasa/core/error.h"
#include "fasa/core/process.h"
#include "fasa/engine/prompt.h"

namespace fasa::server {

namespace {

constexpr auto kPoll = std::chrono::milliseconds(50);  // how often a waiting request checks
                                                       // that its client is still there

// Forwards to the connection's writer and remembers the status, for the request counters.
class StatusRecorder : public http::ResponseWriter {
 public:
  explicit StatusRecorder(http::ResponseWriter& w) : w_(w) {}
  int status = 0;
  void send(int s, std::string_view type, std::string_view body,
            const http::Headers& headers) override {
    status = s;
    w_.send(s, type, body, headers);
  }
  bool begin_stream(int s, std::string_view type, const http::Headers& headers) override {
    status = s;
    return w_.begin_stream(s, type, headers);
  }
  bool write_chunk(std::string_view data) override { return w_.write_chunk(data); }
  void end_stream() override { w_.end_stream(); }
  bool client_gone() override { return w_.client_gone(); }

 private:
  http::ResponseWriter& w_;
};

void send_json(http::ResponseWriter& w, int status, const std::string& body,
               const http::Headers& headers = {}) {
  w.send(status, "application/json", body, headers);
}

void send_error(http::ResponseWriter& w, int status, const std::string& message,
                const http::Headers& headers = {}) {
  send_json(w, status,
            http::error_json(status, message,
                             status >= 500 ? "server_error" : "invalid_request_error"),
            headers);
}

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

}  // namespace

bool equal_constant_time(const std::string& a, const std::string& b) {
  // Every byte of the longer string is visited whatever the contents.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

ApiServer::ApiServer(std::shared_ptr<const Model> model, const ServerConfig& config)
    : model_(std::move(model)), config_(config), started_(unix_now()) {
  if (config_.max_tokens < 1) fail("--max-tokens must be >= 1 (got {})", config_.max_tokens);
  SessionOptions& so = config_.scheduler.session;
  so.n_ctx = resolve_context(model_->config(), so.n_ctx);
  scheduler_ = std::make_unique<Scheduler>(model_, config_.scheduler);
  // The default policy must work before any request depends on it.
  try {
    choose_policy(config_.policy, PolicyRequest{}, scheduler_->policy_context());
  } catch (const ApiError& e) {
    fail("default policy: {}", e.what());
  }
  // Cheap answers that must come whatever the load: served on the HTTP server's reserve too.
  config_.http.reserved_paths = {"/health", "/metrics"};
  http_ = std::make_unique<http::Server>(config_.http,
                                         [this](const http::Request& req, http::ResponseWriter& w) {
                                           handle(req, w);
                                         });
}

ApiServer::~ApiServer() { stop(); }

void ApiServer::start() { http_->start(); }

void ApiServer::stop() {
  if (http_) http_->stop();
}

bool ApiServer::authorized(const http::Request& req) const {
  if (config_.api_key.empty()) return true;
  const std::string* h = req.header("authorization");
  const std::string prefix = "Bearer ";
  const std::string given =
      h && h->compare(0, prefix.size(), prefix) == 0 ? h->substr(prefix.size()) : std::string();
  return equal_constant_time(given, config_.api_key);
}

void ApiServer::handle(const http::Request& req, http::ResponseWriter& w) {
  StatusRecorder rec(w);
  std::string endpoint = req.path;
  static const char* kKnown[] = {"/health", "/metrics", "/v1/models", "/v1/completions",
                                 "/v1/chat/completions"};
  if (std::find(std::begin(kKnown), std::end(kKnown), endpoint) == std::end(kKnown)) {
    endpoint = "other";  // bounded label set for the metrics
  }
  try {
    route(req, rec, endpoint);
  } catch (const ApiError& e) {
    if (rec.status == 0) send_error(rec, e.status, e.what());
  } catch (const std::exception& e) {
    if (rec.status == 0) send_error(rec, 500, e.what());
  }
  counters_.add(endpoint, rec.status);
}

void ApiServer::route(const http::Request& req, http::ResponseWriter& w,
                      const std::string& endpoint) {
  const bool get = req.method == "GET", post = req.method == "POST";
  if (endpoint == "/health") {
    if (!get) throw ApiError(405, "use GET for /health");
    send_json(w, 200, R"({"status":"ok"})");
    return;
  }
  if (endpoint == "other") throw ApiError(404, fmt::format("no such endpoint: {}", req.path));
  if (!authorized(req)) {
    send_error(w, 401, "invalid or missing API key (send 'Authorization: Bearer KEY')",
               {{"WWW-Authenticate", "Bearer"}});
    return;
  }
  if (endpoint == "/metrics" || endpoint == "/v1/models") {
    if (!get) throw ApiError(405, fmt::format("use GET for {}", endpoint));
    if (endpoint == "/v1/models") {
      send_json(w, 200, render_models({config_.model_id}, started_));
    } else {
      const ProcessMemory mem{current_rss_bytes(), peak_rss_bytes()};
      w.send(200, "text/plain; version=0.0.4",
             render_metrics(scheduler_->stats(), config_.scheduler.parallel, counters_.snapshot(),
                            mem));
    }
    return;
  }
  if (!post) throw ApiError(405, fmt::format("use POST for {}", endpoint));
  generate(req, w, endpoint == "/v1/completions" ? Endpoint::Completions : Endpoint::Chat);
}

namespace {

// The finished job's reason and counts.
void finish_outcome(const Job& job, GenOutcome& out) {
  const JobResult jr = job.result();
  out.finish_reason = finish_reason(jr.stop_reason);
  out.prompt_tokens = jr.prompt_tokens;
  out.completion_tokens = jr.completion_tokens;
  out.kv_bytes_read = jr.kv_bytes_read;
  out.kv_bytes_read_per_token =
      jr.decode_tokens ? static_cast<double>(jr.kv_bytes_read) / jr.decode_tokens : 0.0;
  out.lossless_stats = jr.lossless;
}

// Waits for the whole text and sends it as one JSON body.
void answer_whole(Job& job, http::ResponseWriter& w, Endpoint endpoint, GenOutcome& out) {
  for (;;) {
    Job::Update u = job.wait(kPoll);
    out.text += u.text;
    if (u.finished) {
      if (!u.error.empty()) throw ApiError(500, u.error);
      break;
    }
    if (w.client_gone()) {  // nobody to answer: free the sequence now
      job.cancel();
      throw ApiError(499, "client closed the connection");
    }
  }
  finish_outcome(job, out);
  send_json(w, 200,
            endpoint == Endpoint::Chat ? render_chat_completion(out) : render_completion(out));
}

// Server-sent events: (chat: a first chunk with the role,) a chunk per piece of text, the
// finish_reason, the usage when asked, [DONE]. A client gone mid-stream cancels the job.
void answer_stream(Job& job, http::ResponseWriter& w, Endpoint endpoint, bool include_usage,
                   GenOutcome& out) {
  auto chunk = [&](std::string_view delta, std::string_view reason, bool first) {
    return endpoint == Endpoint::Chat ? sse_chat_chunk(out, delta, reason, first)
                                      : sse_completion_chunk(out, delta, reason);
  };
  bool ok = w.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
  if (ok && endpoint == Endpoint::Chat) ok = w.write_chunk(chunk("", "", true));
  while (ok) {
    Job::Update u = job.wait(kPoll);
    if (!u.text.empty()) ok = w.write_chunk(chunk(u.text, "", false));
    if (!ok || (!u.finished && w.client_gone())) {
      ok = false;
      break;
    }
    if (!u.finished) continue;
    if (!u.error.empty()) {
      w.write_chunk("data: " + http::error_json(500, u.error, "server_error") + "\n\n");
    } else {
      finish_outcome(job, out);
      w.write_chunk(chunk("", out.finish_reason, false));
      if (include_usage) w.write_chunk(sse_usage_chunk(out, endpoint));
      w.write_chunk(sse_done());
    }
    w.end_stream();
    return;
  }
  job.cancel();  // the client went away mid-stream
}

// Lossless decoding takes drafts back, which FASA-M's file tier cannot (engine/lossless.h).
// `spec` is a policy spec, `extra` more options on top of it.
void check_lossless_policy(const std::string& spec, const PolicyOptions& extra = {}) {
  std::string name;
  PolicyOptions opts;
  if (!spec.empty()) parse_policy_spec(spec, &name, &opts);
  for (const auto& [k, v] : extra) opts[k] = v;
  const auto v = opts.find("variant");
  if (v != opts.end() && v->second == "m") {
    throw ApiError(400,
                   "'fasa.lossless' cannot be used with FASA-M (variant=m): its tiered KV "
                   "cache cannot take drafts back; use variant=c",
                   "fasa.lossless");
  }
}

}  // namespace

void ApiServer::generate(const http::Request& req, http::ResponseWriter& w, Endpoint endpoint) {
  const GenRequest r = checked_request(req, endpoint);
  std::vector<int32_t> prompt = prompt_tokens(r, endpoint);
  const GenerateOptions go = generate_options(r);
  // The request's own fields first, so that the conflict is named before, say, a missing
  // calibration; then the spec the server chose (its default policy may be FASA-M).
  if (r.lossless.k > 0) check_lossless_policy(r.fasa.policy, r.fasa.options);
  const std::string policy = choose_policy(config_.policy, r.fasa, scheduler_->policy_context());
  if (r.lossless.k > 0) check_lossless_policy(policy);
  auto job = std::make_shared<Job>(std::move(prompt), go, policy, r.lossless);
  if (!scheduler_->submit(job)) {
    send_error(w, 503,
               fmt::format("the server is busy: {} sequences running and the queue is full; "
                           "retry later",
                           config_.scheduler.parallel),
               {{"Retry-After", "1"}});
    return;
  }
  GenOutcome out = outcome_of(endpoint, policy);
  out.lossless = lossless_name(r.lossless);
  if (r.stream) {
    answer_stream(*job, w, endpoint, r.include_usage, out);
  } else {
    answer_whole(*job, w, endpoint, out);
  }
}

// The request's body, parsed; a model this server does not serve or too many tokens fail here.
GenRequest ApiServer::checked_request(const http::Request& req, Endpoint endpoint) const {
  GenRequest r = endpoint == Endpoint::Completions ? parse_completion_request(req.body)
                                                   : parse_chat_request(req.body);
  if (!r.model.empty() && r.model != config_.model_id) {
    throw ApiError(404,
                   fmt::format("model '{}' is not served here (this server serves '{}')", r.model,
                               config_.model_id),
                   "model");
  }
  if (r.max_tokens > config_.max_tokens) {
    throw ApiError(400,
                   fmt::format("'max_tokens' is {}, above this server's limit of {}", r.max_tokens,
                               config_.max_tokens),
                   "max_tokens");
  }
  return r;
}

// The prompt's tokens (chat: rendered in the model's format); it must leave room for one more.
std::vector<int32_t> ApiServer::prompt_tokens(const GenRequest& r, Endpoint endpoint) const {
  std::vector<int32_t> prompt;
  try {
    prompt = endpoint == Endpoint::Chat ? chat_prompt_tokens(*model_, r.messages, r.parse_special)
                                        : text_prompt_tokens(*model_, r.prompt, r.parse_special);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), endpoint == Endpoint::Chat ? "messages" : "prompt");
  }
  const int n_ctx = scheduler_->options().session.n_ctx;
  if (prompt.empty()) throw ApiError(400, "the prompt is empty (no tokens)", "prompt");
  if (static_cast<int>(prompt.size()) >= n_ctx) {
    throw ApiError(400,
                   fmt::format("the prompt is {} tokens; this server's context is {} tokens "
                               "(the prompt must leave room for at least one new token)",
                               prompt.size(), n_ctx),
                   endpoint == Endpoint::Chat ? "messages" : "prompt");
  }
  return prompt;
}

// Sampling and stop strings; without a seed, a random one.
GenerateOptions ApiServer::generate_options(const GenRequest& r) const {
  GenerateOptions go;
  go.n_predict = r.max_tokens > 0 ? r.max_tokens : config_.max_tokens;
  go.sampler = r.sampler;
  go.sampler.seed = r.seed ? *r.seed : std::random_device{}();
  go.stop = r.stop;
  try {
    go.sampler.validate();
  } catch (const Error& e) {
    throw ApiError(400, e.what());
  }
  return go;
}

// The answer's fixed fields: id, time, model and policy.
GenOutcome ApiServer::outcome_of(Endpoint endpoint, const std::string& policy) {
  GenOutcome out;
  out.id = fmt::format("{}-{:x}{:06x}", endpoint == Endpoint::Chat ? "chatcmpl" : "cmpl", started_,
                       next_id_.fetch_add(1));
  out.created = unix_now();
  out.model = config_.model_id;
  out.policy = policy;
  return out;
}

}  // namespace fasa::server
