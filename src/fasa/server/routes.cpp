#include "fasa/server/routes.h"

#include "fasa/core/process.h"
#include "fasa/io/gguf.h"
#include "fasa/server/server.h"
#include "fasa/server/tokenize_api.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa::server {

namespace {

void send_json(http::ResponseWriter& w, const std::string& body) {
  w.send(200, "application/json", body, {});
}

}  // namespace

const std::vector<Route>& api_routes() {
  // clang-format off
  static const std::vector<Route> kRoutes = {
      // method  path                    key    reserved logged  handler
      {"GET",  "/health",               false, true,    false, &ApiServer::serve_health},
      {"GET",  "/metrics",              true,  true,    false, &ApiServer::serve_metrics},
      {"GET",  "/v1/models",            true,  false,   true,  &ApiServer::serve_models},
      {"POST", "/v1/completions",       true,  false,   true,  &ApiServer::serve_completions},
      {"POST", "/v1/chat/completions",  true,  false,   true,  &ApiServer::serve_chat},
      {"POST", "/tokenize",             true,  false,   true,  &ApiServer::serve_tokenize},
      {"POST", "/detokenize",           true,  false,   true,  &ApiServer::serve_detokenize},
      {"GET",  "/tokenizer_info",       true,  false,   true,  &ApiServer::serve_tokenizer_info},
  };
  // clang-format on
  return kRoutes;
}

const Route* find_route(std::string_view path) {
  for (const Route& r : api_routes()) {
    if (path == r.path) return &r;
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
