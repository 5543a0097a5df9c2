#include "fasa/server/server.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "fasa/attention/calibration_store.h"
#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/engine/prompt.h"
#include "fasa/server/api_fields.h"
#include "fasa/server/cors.h"
#include "fasa/server/text_escape.h"
#include "fasa/server/tool_answer.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa::server {

namespace {

constexpr auto kPoll = std::chrono::milliseconds(50);  // how often a waiting request checks
                                                       // that its client is still there

// Forwards to the connection's writer and remembers the status, for the request counters.
class StatusRecorder : public http::ResponseWriter {
 public:
  explicit StatusRecorder(http::ResponseWriter& w) : w_(w) {}
  int status = 0;
  // The status is recorded once the writer took the answer (a refused header throws first).
  void send(int s, std::string_view type, std::string_view body,
            const http::Headers& headers) override {
    w_.send(s, type, body, headers);
    status = s;
  }
  bool begin_stream(int s, std::string_view type, const http::Headers& headers) override {
    const bool ok = w_.begin_stream(s, type, headers);
    status = s;
    return ok;
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

// The request log's bounds: a path and a note (policy, fields, an error quoting the client).
constexpr size_t kLogPathBytes = 256;
constexpr size_t kLogNoteBytes = 1024;

bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (std::tolower(x) != std::tolower(y)) return false;
  }
  return true;
}

// The credentials of "Authorization: Bearer KEY" (the scheme in any case, RFC 9110 section
// 11.1), or "" when the header is another scheme or absent.
std::string bearer_token(const std::string* header) {
  if (header == nullptr) return {};
  const std::string_view h = *header;
  const size_t space = h.find(' ');
  if (space == std::string_view::npos || !ascii_iequals(h.substr(0, space), "bearer")) return {};
  std::string_view token = h.substr(space);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  return std::string(token);
}

// A JSON body's media type: application/json, parameters allowed (RFC 9110 section 8.3.1).
bool json_content_type(const std::string* header) {
  if (header == nullptr) return false;
  std::string_view type = std::string_view(*header).substr(0, header->find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  return ascii_iequals(type, "application/json");
}

// `message` with every mention of the calibration's path replaced by its file name.
std::string without_path(std::string message, const std::string& path, const std::string& name) {
  if (path.empty() || path == name) return message;
  for (size_t at = message.find(path); at != std::string::npos;
       at = message.find(path, at + name.size())) {
    message.replace(at, path.size(), name);
  }
  return message;
}

}  // namespace

void LogprobRenderer::append(const std::vector<TokenLogprob>& in,
                             std::vector<LogprobEntry>& out) const {
  for (const TokenLogprob& t : in) {
    LogprobEntry e;
    e.token = tok.token_to_bytes(t.id);
    e.logprob = t.logprob;
    for (const auto& [id, lp] : t.top) e.top.emplace_back(tok.token_to_bytes(id), lp);
    out.push_back(std::move(e));
  }
}

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
  check_cors_origins(config_.cors_origins);
  for (const std::string& key : config_.api_keys) {
    if (key.empty()) fail("an API key must not be empty");
  }
  const std::string& calib = config_.policy.calib;
  if (!calib.empty() && calib != "online" && calib != "auto") {  // named by file name and sha256
    calib_name_ = std::filesystem::path(config_.policy.calib).filename().string();
    calib_sha256_ = sha256_file_hex(config_.policy.calib);
  }
  SessionOptions& so = config_.scheduler.session;
  so.n_ctx = resolve_context(model_->config(), so.n_ctx);
  scheduler_ = std::make_unique<Scheduler>(model_, config_.scheduler);
  scorer_ = std::make_unique<PromptScorer>(model_, so, scheduler_->policy_context(),
                                           config_.scheduler.prompt_cache_bytes);
  // The default policy must work before any request depends on it.
  try {
    choose_policy(config_.policy, PolicyRequest{}, scheduler_->policy_context());
  } catch (const ApiError& e) {
    fail("default policy: {}", e.what());
  }
  // Cheap answers that must come whatever the load: served on the HTTP server's reserve too.
  config_.http.reserved_paths = reserved_route_paths();
  http_ = std::make_unique<http::Server>(config_.http,
                                         [this](const http::Request& req, http::ResponseWriter& w) {
                                           handle(req, w);
                                         });
}

ApiServer::~ApiServer() { stop(); }

void ApiServer::start() { http_->start(); }

void ApiServer::stop() {
  stopping_ = true;
  if (http_) http_->stop();
}

int ApiServer::caller(const http::Request& req) const {
  if (config_.api_keys.empty()) return kNoKeys;
  const std::string given = bearer_token(req.header("authorization"));
  int found = -1;
  for (size_t i = 0; i < config_.api_keys.size(); ++i) {  // every key compared, whatever matched
    if (equal_constant_time(given, config_.api_keys[i]) && found < 0) found = static_cast<int>(i);
  }
  return given.empty() ? -1 : found;
}

std::string ApiServer::cache_scope(int caller, const std::string& salt) const {
  std::string scope = config_.prompt_cache_shared || caller < 0 ? "" : fmt::format("key{}", caller);
  if (!salt.empty()) scope += "\x1f" + salt;  // (no key index contains the separator)
  return scope;
}

void ApiServer::handle(const http::Request& req, http::ResponseWriter& w) {
  const auto t0 = std::chrono::steady_clock::now();
  // Every answer to an allowed Origin carries the CORS headers, errors and streams included.
  const auto origin = allowed_origin(config_.cors_origins, req.header("origin"));
  HeaderAdder cors(w, origin ? cors_answer_headers(*origin) : http::Headers{});
  StatusRecorder rec(cors);
  const Route* r = find_route(req.path);
  const std::string endpoint = r ? r->path : "other";  // bounded label set for the metrics
  std::string note;
  try {
    note = route(req, rec, r);
  } catch (const ApiError& e) {
    if (rec.status == 0) send_error(rec, e.status, e.what());
    note = e.param.empty() ? e.what() : fmt::format("{} ({})", e.what(), e.param);
  } catch (const std::exception& e) {
    if (rec.status == 0) send_error(rec, 500, e.what());
    note = e.what();
  }
  counters_.add(endpoint, rec.status);
  if (config_.log_requests && (r == nullptr || r->logged)) {
    // One line whatever the client sent: its bytes escaped and bounded.
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string line =
        fmt::format("fasa serve: {} {} {} {} {:.3f} s{}{}\n", req.peer, log_text(req.method, 32),
                    log_text(req.path, kLogPathBytes), rec.status, s, note.empty() ? "" : " ",
                    log_text(without_path(note, config_.policy.calib, calib_name_), kLogNoteBytes));
    std::fputs(line.c_str(), stderr);
  }
}

std::string ApiServer::route(const http::Request& req, http::ResponseWriter& w, const Route* r) {
  if (r == nullptr) throw ApiError(404, fmt::format("no such endpoint: {}", req.path));
  if (req.method == "OPTIONS" && !config_.cors_origins.empty()) return preflight(req, w, *r);
  int who = kNoKeys;
  if (r->needs_key) {
    who = caller(req);
    if (who == -1) {
      send_error(w, 401, "invalid or missing API key (send 'Authorization: Bearer KEY')",
                 {{"WWW-Authenticate", "Bearer"}});
      return {};
    }
  }
  const std::string_view method = r->method;
  if (req.method != method) throw ApiError(405, fmt::format("use {} for {}", method, r->path));
  // A web page may POST text/plain to any address without asking (a CORS "simple request"):
  // a JSON body must say it is one.
  if (method == "POST" && !json_content_type(req.header("content-type"))) {
    throw ApiError(415, fmt::format("the body of POST {} must be JSON: send 'Content-Type: "
                                    "application/json'",
                                    r->path));
  }
  return (this->*(r->handler))(req, w, who);
}

namespace {

// The finished job's reason and counts.
void finish_outcome(const Job& job, GenOutcome& out) {
  const JobResult jr = job.result();
  out.finish_reason = finish_reason(jr.stop_reason);
  out.prompt_tokens = jr.prompt_tokens;
  out.completion_tokens = jr.completion_tokens;
  out.cached_tokens = jr.cached_tokens;
  out.kv_bytes_read = jr.kv_bytes_read;
  out.kv_bytes_read_per_token =
      jr.decode_tokens ? static_cast<double>(jr.kv_bytes_read) / jr.decode_tokens : 0.0;
  out.lossless_stats = jr.lossless;
  out.prompt_ms = jr.prompt_seconds * 1e3;
  out.predicted_ms = jr.predicted_seconds * 1e3;
}

// Waits for every choice's whole text and sends them as one JSON body. outs[i] is jobs[i]'s
// choice, holding what comes before its text (echo).
void answer_whole(const std::vector<std::shared_ptr<Job>>& jobs, http::ResponseWriter& w,
                  Endpoint endpoint, std::vector<GenOutcome>& outs, const http::Headers& headers,
                  const LogprobRenderer& lp, const ToolAnswer& tools) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    for (;;) {
      Job::Update u = jobs[i]->wait(kPoll);
      outs[i].text += u.text;
      lp.append(u.logprobs, outs[i].logprobs);
      if (u.finished) {
        if (!u.error.empty()) throw ApiError(500, u.error);
        break;
      }
      if (w.client_gone()) {  // nobody to answer: free the sequences now
        for (const auto& job : jobs) job->cancel();
        throw ApiError(499, "client closed the connection");
      }
    }
    finish_outcome(*jobs[i], outs[i]);
    if (tools.tools) read_tool_calls(tools.format, *tools.tools, outs[i]);
  }
  http::Headers h = headers;
  for (auto& kv : fasa_headers(outs, true)) h.push_back(std::move(kv));
  send_json(w, 200,
            endpoint == Endpoint::Chat ? render_chat_completion(outs) : render_completion(outs), h);
}

// Server-sent events: (chat: a first chunk with the role,) a chunk per piece of text of each
// choice (its index), each choice's finish_reason, the usage when asked, [DONE]. A client gone
// mid-stream (or a server that stops) cancels the jobs: false, the stream was cut.
bool answer_stream(const std::vector<std::shared_ptr<Job>>& jobs, http::ResponseWriter& w,
                   Endpoint endpoint, bool include_usage, std::vector<GenOutcome>& outs,
                   const http::Headers& headers, const LogprobRenderer& lp,
                   const ToolAnswer& tools) {
  std::vector<ToolCallStream> calls;  // with tools: each choice's text held back until certain
  if (tools.tools) calls.assign(jobs.size(), ToolCallStream(tools.format, *tools.tools));
  auto chunk = [&](const GenOutcome& o, std::string_view delta, std::string_view reason, bool first,
                   const std::vector<LogprobEntry>& l,
                   const std::vector<GenOutcome>* timed = nullptr) {
    return endpoint == Endpoint::Chat ? sse_chat_chunk(o, delta, reason, first, l, timed)
                                      : sse_completion_chunk(o, delta, reason, l, timed);
  };
  http::Headers h = headers;
  h.emplace_back("Cache-Control", "no-cache");
  for (auto& kv : fasa_headers(outs, false)) h.push_back(std::move(kv));  // counts come later
  bool ok = w.begin_stream(200, "text/event-stream", h);
  for (size_t i = 0; ok && endpoint == Endpoint::Chat && i < jobs.size(); ++i) {
    ok = w.write_chunk(chunk(outs[i], "", "", true, {}));
  }
  std::vector<bool> finished(jobs.size(), false);
  size_t n_finished = 0;
  const auto slice = std::max(std::chrono::milliseconds(1), kPoll / static_cast<int>(jobs.size()));
  while (ok && n_finished < jobs.size()) {
    for (size_t i = 0; ok && i < jobs.size(); ++i) {
      if (finished[i]) continue;
      Job::Update u = jobs[i]->wait(slice);
      std::vector<LogprobEntry> l;
      lp.append(u.logprobs, l);
      const std::string text = tools.tools ? calls[i].push(u.text) : u.text;
      if (!text.empty() || !l.empty()) ok = w.write_chunk(chunk(outs[i], text, "", false, l));
      if (!ok || (!u.finished && w.client_gone())) {
        ok = false;
        break;
      }
      if (!u.finished) continue;
      if (!u.error.empty()) {
        w.write_chunk("data: " + http::error_json(500, u.error, "server_error") + "\n\n");
        w.end_stream();
        for (const auto& job : jobs) job->cancel();
        return true;
      }
      finish_outcome(*jobs[i], outs[i]);
      if (tools.tools) ok = w.write_chunk(calls[i].finish(outs[i]));
      finished[i] = true;
      ++n_finished;
      // The stream's last chunk carries the timings: this one, unless a usage chunk follows.
      const bool last = n_finished == jobs.size() && !include_usage;
      ok = w.write_chunk(
          chunk(outs[i], "", outs[i].finish_reason, false, {}, last ? &outs : nullptr));
    }
  }
  if (!ok) {  // the client went away mid-stream
    for (const auto& job : jobs) job->cancel();
    return false;
  }
  if (include_usage) w.write_chunk(sse_usage_chunk(outs, endpoint));
  w.write_chunk(sse_done());
  w.end_stream();
  return true;
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

std::string ApiServer::generate(const http::Request& req, http::ResponseWriter& w,
                                Endpoint endpoint, int who) {
  const GenRequest r = checked_request(req, endpoint);
  const std::string scope = cache_scope(who, r.cache_salt);
  const std::vector<GenRequest> each = one_request_per_prompt(r);  // completions' prompt arrays
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < each.size(); ++i) {
    try {
      prompts.push_back(prompt_tokens(each[i], endpoint));
    } catch (const ApiError& e) {  // which prompt of several
      if (each.size() == 1) throw;
      throw ApiError(e.status, fmt::format("prompt[{}]: {}", i, e.what()),
                     fmt::format("prompt[{}]", i));
    }
  }
  check_against_model(r);
  check_sequences_fit(r, each.size(), config_.scheduler.parallel + config_.scheduler.max_queue);
  std::vector<GenerateOptions> options;
  for (size_t i = 0; i < each.size(); ++i) options.push_back(generate_options(each[i], prompts[i]));
  ToolAnswer tools;  // chat: one prompt
  for (GenerateOptions& o : options) tools = tool_answer(*model_, r, o);
  // The request's own fields first, so that the conflict is named before, say, a missing
  // calibration; then the spec the server chose (its default policy may be FASA-M).
  if (r.lossless.k > 0) check_lossless_policy(r.fasa.policy, r.fasa.options);
  std::string policy;
  try {
    policy = choose_policy(config_.policy, r.fasa, scheduler_->policy_context());
  } catch (const ApiError& e) {  // the server's files are named by their file names only
    throw ApiError(e.status, without_path(e.what(), config_.policy.calib, calib_name_), e.param);
  }
  if (r.lossless.k > 0) check_lossless_policy(policy);
  http::Headers headers;
  std::string sizes;
  for (const auto& p : prompts) sizes += fmt::format("{}{}", sizes.empty() ? "" : "+", p.size());
  std::string note = fmt::format("prompt={} n={} policy={}", sizes, r.n, policy);
  if (!r.ignored.empty()) {
    headers.emplace_back("X-Fasa-Ignored-Fields", ignored_fields_header(r.ignored));
    std::string list;
    for (const std::string& f : r.ignored) list += (list.empty() ? "" : ", ") + f;
    note += " ignored=[" + list + "]";
  }
  const LogprobRenderer lp{model_->require_tokenizer()};
  GenOutcome base = outcome_of(endpoint, shown_spec(policy));
  base.calibration_kind = calibration_kind(policy);
  if (base.calibration_kind != "online" && !base.calibration_kind.empty() && !calib_name_.empty()) {
    base.calibration_file = calib_name_;
    base.calibration_sha256 = calib_sha256_;
  }
  base.lossless = lossless_name(r.lossless);
  base.has_logprobs = r.logprobs >= 0;
  // Prompt i's choice j is choice i * n + j, as OpenAI numbers them.
  std::vector<std::shared_ptr<Job>> jobs;
  std::vector<GenOutcome> outs;
  for (size_t i = 0; i < each.size(); ++i) {
    GenOutcome b = base;
    b.prompt_index = static_cast<int>(i);
    b.prompt_tokens = static_cast<int>(prompts[i].size());
    if (r.echo) {  // the prompt's text (and its logprobs) come first
      b.text = each[i].prompt_is_ids ? lp.tok.decode(prompts[i]) : each[i].prompt;
      if (r.logprobs >= 0) b.logprobs = score_prompt(prompts[i], r.logprobs, lp, scope);
    }
    for (int j = 0; j < r.n; ++j) {
      outs.push_back(b);
      outs.back().index = static_cast<int>(i) * r.n + j;
      if (r.max_tokens == 0) {  // echo only: the prompt scored, nothing generated
        outs.back().finish_reason = "length";
        continue;
      }
      GenerateOptions gj = options[i];
      gj.sampler.seed = r.seed ? *r.seed + static_cast<uint64_t>(j) : std::random_device{}();
      jobs.push_back(std::make_shared<Job>(prompts[i], std::move(gj), policy, r.lossless, scope));
      if (!scheduler_->submit(jobs.back())) {
        for (const auto& job : jobs) job->cancel();
        http::Headers busy = headers;
        busy.emplace_back("Retry-After", "1");
        send_error(w, 503,
                   fmt::format("the server is busy: {} sequences running and the queue is full; "
                               "retry later",
                               config_.scheduler.parallel),
                   busy);
        return note;
      }
    }
  }
  if (r.max_tokens == 0) {
    for (auto& kv : fasa_headers(outs, true)) headers.push_back(std::move(kv));
    send_json(w, 200, render_completion(outs), headers);
    return note;
  }
  // A connection that ends before its answer does: the client left, or the server stopped (its
  // writes fail, and the log says which).
  const char* cut = nullptr;
  if (r.stream) {
    if (!answer_stream(jobs, w, endpoint, r.include_usage, outs, headers, lp, tools)) {
      const bool by_server = stopping_.load();
      cut = by_server ? "the server stopped" : "the client closed the connection";
      counters_.add_cut(req.path, by_server ? "server" : "client");
    }
  } else {
    try {
      answer_whole(jobs, w, endpoint, outs, headers, lp, tools);
    } catch (const ApiError& e) {
      if (e.status != 499 || !stopping_.load()) throw;
      throw ApiError(503, "the server stopped before the answer was complete");
    }
  }
  if (cut) {  // the jobs were cancelled: how many tokens they made is not final
    return note + fmt::format(" stream cut: {}", cut);
  }
  for (const auto& job : jobs) {
    const JobResult jr = job->result();
    latency_.observe(jr.ttft_seconds, jr.per_token_seconds);
    note += fmt::format(" completion={}", jr.completion_tokens);
  }
  return note;
}

// The prompt's logprobs (echo): each token's under the model given the ones before it
// (prompt_scorer.h: dense, and a prompt that starts like an earlier one evaluates only the
// rest). The first token has none.
std::vector<LogprobEntry> ApiServer::score_prompt(const std::vector<int32_t>& prompt, int top,
                                                  const LogprobRenderer& lp,
                                                  const std::string& scope) {
  std::vector<LogprobEntry> out(1);
  out[0].token = lp.tok.token_to_bytes(prompt[0]);
  std::lock_guard<std::mutex> lock(score_mu_);
  lp.append(scorer_->score(prompt, top, scope), out);
  return out;
}

std::string ApiServer::echo_metrics() {
  std::lock_guard<std::mutex> lock(score_mu_);
  return render_echo_metrics(scorer_->stats());
}

// What a request may only ask of this model: token ids (logit_bias, stop_token_ids) in its
// vocabulary (the prompt's: prompt_tokens); lossless decoding draws its own tokens, so no logit
// rules, JSON mode, logprobs or min_tokens with it.
void ApiServer::check_against_model(const GenRequest& r) const {
  const int n_vocab = model_->config().n_vocab;
  for (size_t i = 0; i < r.stop_token_ids.size(); ++i) {
    if (r.stop_token_ids[i] >= n_vocab) {
      throw ApiError(400,
                     fmt::format("'stop_token_ids[{}]' is token id {}, outside the vocabulary "
                                 "[0, {})",
                                 i, r.stop_token_ids[i], n_vocab),
                     fmt::format("stop_token_ids[{}]", i));
    }
  }
  if (r.lossless.k > 0 && r.min_tokens > 0) {
    throw ApiError(400,
                   "'min_tokens' cannot be combined with 'fasa.lossless' (its verification "
                   "samples from full attention's own distribution, which min_tokens changes)",
                   "min_tokens");
  }
  for (const auto& [id, b] : r.rules.bias) {
    if (id >= n_vocab) {
      throw ApiError(400,
                     fmt::format("'logit_bias' names token id {}, outside the vocabulary [0, {})",
                                 id, n_vocab),
                     fmt::format("logit_bias.{}", id));
    }
  }
  if (r.lossless.k > 0 && (r.rules.any() || r.json_object || r.grammar || r.logprobs >= 0)) {
    throw ApiError(400,
                   "'fasa.lossless' cannot be combined with penalties, logit_bias, "
                   "response_format json_object or json_schema, guided_json, guided_choice or "
                   "logprobs (its verification samples from full attention's own distribution)",
                   "fasa.lossless");
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
    if (r.prompt_is_ids) {
      prompt = r.prompt_ids;
    } else {
      prompt = endpoint == Endpoint::Chat
                   ? chat_prompt_tokens(*model_, r.messages, r.tools, r.parse_special)
                   : text_prompt_tokens(*model_, r.prompt, r.parse_special);
    }
  } catch (const Error& e) {
    throw ApiError(400, e.what(), endpoint == Endpoint::Chat ? "messages" : "prompt");
  }
  const int n_vocab = model_->config().n_vocab;
  for (int32_t id : r.prompt_ids) {
    if (id >= n_vocab) {
      throw ApiError(400,
                     fmt::format("'prompt' holds token id {}, outside the vocabulary [0, {})", id,
                                 n_vocab),
                     "prompt");
    }
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

// Sampling, stop strings, logit rules, JSON mode and logprobs; without a seed, a random one.
GenerateOptions ApiServer::generate_options(const GenRequest& r,
                                            const std::vector<int32_t>& prompt) const {
  GenerateOptions go;
  go.n_predict = r.max_tokens > 0 ? r.max_tokens : config_.max_tokens;
  go.sampler = r.sampler;
  go.sampler.seed = r.seed ? *r.seed : std::random_device{}();
  go.stop = r.stop;
  go.rules = r.rules;
  if (go.rules.repetition_penalty != 1.0f) go.rules.prompt = prompt;
  go.json_object = r.json_object;
  go.grammar = r.grammar;
  go.logprobs = r.logprobs;
  go.stop_at_eog = !r.ignore_eos;
  go.stop_token_ids = r.stop_token_ids;
  go.min_tokens = r.min_tokens;
  const int limit = r.max_tokens >= 0 ? r.max_tokens : config_.max_tokens;
  if (r.min_tokens > limit) {
    throw ApiError(400,
                   fmt::format("'min_tokens' is {}, above the answer's token limit of {} "
                               "('max_tokens', or this server's default)",
                               r.min_tokens, limit),
                   "min_tokens");
  }
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
