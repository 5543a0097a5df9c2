#include "fasa/server/routes.h"

#include <fmt/format.h>

#include "fasa/core/process.h"
#include "fasa/io/gguf.h"
#include "fasa/server/cors.h"
#include "fasa/server/server.h"
#include "fasa/server/text_escape.h"
#include "fasa/server/tokenize_api.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa::server {

namespace {

void send_json(http::ResponseWriter& w, const std::string& body) {
  w.send(200, "application/json", body, {});
}

// %XX sequences as their bytes; a '%' not followed by two hex digits stays as it is.
std::string percent_decoded(std::string_view s) {
  const auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

const std::vector<Route>& api_routes() {
  // clang-format off
  static const std::vector<Route> kRoutes = {
      // method  path                    key    reserved logged  handler
      {"GET",  "/health",               false, true,    false, &ApiServer::serve_health},
      {"GET",  "/metrics",              true,  true,    false, &ApiServer::serve_metrics},
      {"GET",  "/v1/models",            true,  false,   true,  &ApiServer::serve_models},
      {"GET",  "/v1/models/{id}",       true,  false,   true,  &ApiServer::serve_model},
      {"POST", "/v1/completions",       true,  false,   true,  &ApiServer::serve_completions},
      {"POST", "/v1/chat/completions",  true,  false,   true,  &ApiServer::serve_chat},
      {"POST", "/tokenize",             true,  false,   true,  &ApiServer::serve_tokenize},
      {"POST", "/detokenize",           true,  false,   true,  &ApiServer::serve_detokenize},
      {"GET",  "/tokenizer_info",       true,  false,   true,  &ApiServer::serve_tokenizer_info},
  };
  // clang-format on
  return kRoutes;
}

std::string_view route_param(const Route& r, std::string_view path) {
  const std::string_view pattern = r.path;
  if (pattern.size() < kParam.size() || pattern.substr(pattern.size() - kParam.size()) != kParam) {
    return {};
  }
  const std::string_view prefix = pattern.substr(0, pattern.size() - kParam.size());
  if (path.size() <= prefix.size() || path.substr(0, prefix.size()) != prefix) return {};
  return path.substr(prefix.size());
}

const Route* find_route(std::string_view path) {
  for (const Route& r : api_routes()) {
    if (path == r.path || !route_param(r, path).empty()) return &r;
  }
  return nullptr;
}

std::vector<std::string> reserved_route_paths() {
  std::vector<std::string> paths;
  for (const Route& r : api_routes()) {
    if (r.reserved) paths.emplace_back(r.path);
  }
  return paths;
}

// The Origin's CORS headers come with every answer (ApiServer::handle); a preflight adds what
// it may send. Without an Origin it is a plain OPTIONS: which methods the path takes.
std::string ApiServer::preflight(const http::Request& req, http::ResponseWriter& w,
                                 const Route& r) {
  const std::string* origin = req.header("origin");
  if (origin == nullptr) {
    w.send(204, "", "", {{"Allow", std::string(r.method) + ", OPTIONS"}});
    return "preflight without an Origin";
  }
  if (!allowed_origin(config_.cors_origins, origin)) {
    throw ApiError(403,
                   "this origin may not call this server (fasa serve --cors-origin lists "
                   "the origins that may)");
  }
  w.send(204, "", "",
         cors_preflight_headers(r.method, req.header("access-control-request-headers")));
  return "preflight";
}

std::string ApiServer::serve_health(const http::Request&, http::ResponseWriter& w, int) {
  send_json(w, R"({"status":"ok"})");
  return {};
}

std::string ApiServer::serve_metrics(const http::Request&, http::ResponseWriter& w, int) {
  const ProcessMemory mem{current_rss_bytes(), peak_rss_bytes()};
  w.send(200, "text/plain; version=0.0.4",
         render_metrics(scheduler_->stats(), config_.scheduler.parallel, counters_, mem) +
             echo_metrics() + latency_.render(),
         {});
  return {};
}

std::string ApiServer::serve_models(const http::Request&, http::ResponseWriter& w, int) {
  send_json(w, render_models({config_.model_id}, started_));
  return {};
}

// GET /v1/models/{id}: the id percent-decoded (clients may encode a '/' of "org/name").
std::string ApiServer::serve_model(const http::Request& req, http::ResponseWriter& w, int) {
  const Route* r = find_route(req.path);
  const std::string id = percent_decoded(route_param(*r, req.path));
  if (id != config_.model_id) {
    throw ApiError(404,
                   fmt::format("model '{}' is not served here (this server serves '{}')",
                               log_text(id, 200), config_.model_id),
                   "model");
  }
  send_json(w, render_model(id, started_));
  return {};
}

std::string ApiServer::serve_tokenizer_info(const http::Request&, http::ResponseWriter& w, int) {
  send_json(w, tokenizer_info_body(model_->require_tokenizer(), scheduler_->options().session.n_ctx,
                                   model_->file().get_string_or("tokenizer.chat_template", "")));
  return {};
}

std::string ApiServer::serve_tokenize(const http::Request& req, http::ResponseWriter& w, int) {
  send_json(w, tokenize_body(model_->require_tokenizer(), req.body));
  return {};
}

std::string ApiServer::serve_detokenize(const http::Request& req, http::ResponseWriter& w, int) {
  send_json(w, detokenize_body(model_->require_tokenizer(), req.body));
  return {};
}

std::string ApiServer::serve_completions(const http::Request& req, http::ResponseWriter& w,
                                         int who) {
  return generate(req, w, Endpoint::Completions, who);
}

std::string ApiServer::serve_chat(const http::Request& req, http::ResponseWriter& w, int who) {
  return generate(req, w, Endpoint::Chat, who);
}

}  // namespace fasa::server
