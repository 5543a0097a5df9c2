// Cross-origin requests (cors.h, `fasa serve --cors-origin`) and GET /v1/models/{id}, on the tiny
// byte model: a browser's preflight needs no key and gets 204 with what the page may send; every
// answer to an allowed Origin (errors and streams too) carries Access-Control-Allow-Origin; an
// Origin not allowed gets no CORS header; without --cors-origin OPTIONS stays a wrong method.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/server/cors.h"
#include "fasa/server/server.h"
#include "support/http_client.h"
#include "support/tiny_byte_model.h"

namespace fasa::server {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using test::HttpClient;
using test::HttpResponse;

TEST(Cors, OriginsAreCheckedWhenTheServerStarts) {
  for (const std::vector<std::string> good : {std::vector<std::string>{"http://localhost:3000"},
                                              {"https://app.example.com", "http://127.0.0.1:8000"},
                                              {"*"},
                                              {"chrome-extension://abcdef"},
                                              {}}) {
    EXPECT_NO_THROW(check_cors_origins(good)) << good.size();
  }
  for (const std::vector<std::string> bad : {std::vector<std::string>{"http://localhost:3000/"},
                                             {"http://a.example/path"},
                                             {"localhost:3000"},
                                             {"null"},
                                             {""},
                                             {"http://"},
                                             {"http://a b"},
                                             {"http://a.example?x=1"},
                                             {"1http://a"},
                                             {"*", "http://a.example"}}) {
    EXPECT_THROW(check_cors_origins(bad), Error) << bad[0];
  }
  try {
    check_cors_origins({"http://localhost:3000/"});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--cors-origin 'http://localhost:3000/' is not an origin"),
              std::string::npos)
        << e.what();
  }
}

TEST(Cors, WhichOriginIsAllowed) {
  const std::string page = "http://app.example", other = "http://evil.example",
                    upper = "HTTP://App.Example";
  EXPECT_EQ(allowed_origin({page}, &page), page);
  EXPECT_EQ(allowed_origin({page}, &upper), upper);  // origins compare as ASCII, any case
  EXPECT_EQ(allowed_origin({page}, &other), std::nullopt);
  EXPECT_EQ(allowed_origin({page}, nullptr), std::nullopt);
  EXPECT_EQ(allowed_origin({}, &page), std::nullopt);  // CORS off
  EXPECT_EQ(allowed_origin({"*"}, &other), "*");
}

TEST(Cors, PreflightHeadersAddWhatThePageAsksFor) {
  const std::string asked = "x-stainless-os, content-type,Authorization , bad header, X-Trace";
  const http::Headers h = cors_preflight_headers("POST", &asked);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0],
            (std::pair<std::string, std::string>{"Access-Control-Allow-Methods", "POST, OPTIONS"}));
  EXPECT_EQ(h[1].second, "Authorization, Content-Type, x-stainless-os, X-Trace");
  EXPECT_EQ(h[2].second, "7200");
  EXPECT_EQ(cors_preflight_headers("GET", nullptr)[1].second, "Authorization, Content-Type");
}

std::shared_ptr<const Model> tiny() {
  static std::shared_ptr<const Model> m = test::tiny_byte_model("cors.gguf", false);
  return m;
}

ServerConfig config(std::vector<std::string> origins) {
  ServerConfig cfg;
  cfg.http.port = 0;
  cfg.model_id = "tiny";
  cfg.max_tokens = 4;
  cfg.scheduler.parallel = 1;
  cfg.scheduler.session.n_ctx = 128;
  cfg.log_requests = false;
  cfg.api_keys = {"k"};
  cfg.cors_origins = std::move(origins);
  return cfg;
}

HttpResponse ask(int port, const std::string& method, const std::string& path,
                 const std::string& headers, const std::string& body = "") {
  HttpClient c(port, 30s);
  std::string req = fmt::format("{} {} HTTP/1.1\r\nHost: t\r\n{}", method, path, headers);
  if (!body.empty()) {
    req += fmt::format("Content-Type: application/json\r\nContent-Length: {}\r\n", body.size());
  }
  c.send(req + "\r\n" + body);
  return c.read_response();
}

const std::string kPage = "Origin: http://app.example\r\n";
const std::string kKey = "Authorization: Bearer k\r\n";
const std::string kBody = R"({"prompt": "ab", "max_tokens": 2})";

void expect_cors(const HttpResponse& r, const std::string& allow) {
  EXPECT_EQ(r.header("access-control-allow-origin"), allow) << r.status << " " << r.body;
  EXPECT_EQ(r.header("vary"), "Origin");
  EXPECT_NE(r.header("access-control-expose-headers").find("X-Fasa-Kv-Bytes-Read"),
            std::string::npos);
}

TEST(CorsServer, APreflightNeedsNoKeyAndSaysWhatThePageMaySend) {
  ApiServer srv(tiny(), config({"http://app.example"}));
  srv.start();
  const HttpResponse pre = ask(srv.port(), "OPTIONS", "/v1/chat/completions",
                               kPage + "Access-Control-Request-Method: POST\r\n" +
                                   "Access-Control-Request-Headers: authorization, "
                                   "content-type, x-stainless-lang\r\n");
  EXPECT_EQ(pre.status, 204) << pre.body;
  EXPECT_EQ(pre.body, "");
  expect_cors(pre, "http://app.example");
  EXPECT_EQ(pre.header("access-control-allow-methods"), "POST, OPTIONS");
  EXPECT_EQ(pre.header("access-control-allow-headers"),
            "Authorization, Content-Type, x-stainless-lang");
  EXPECT_EQ(pre.header("access-control-max-age"), "7200");
  const HttpResponse models = ask(srv.port(), "OPTIONS", "/v1/models/tiny", kPage);
  EXPECT_EQ(models.status, 204);
  EXPECT_EQ(models.header("access-control-allow-methods"), "GET, OPTIONS");
  // Not a browser's preflight (no Origin): which methods the path takes.
  const HttpResponse plain = ask(srv.port(), "OPTIONS", "/v1/completions", "");
  EXPECT_EQ(plain.status, 204);
  EXPECT_EQ(plain.header("allow"), "POST, OPTIONS");
  EXPECT_EQ(plain.header("access-control-allow-origin"), "");
  // An origin not allowed: refused, and nothing that would let its page read the answer.
  const HttpResponse evil =
      ask(srv.port(), "OPTIONS", "/v1/completions", "Origin: http://evil.example\r\n");
  EXPECT_EQ(evil.status, 403);
  EXPECT_NE(evil.body.find("--cors-origin"), std::string::npos) << evil.body;
  EXPECT_EQ(evil.header("access-control-allow-origin"), "");
  EXPECT_EQ(evil.header("access-control-allow-methods"), "");
  EXPECT_EQ(ask(srv.port(), "OPTIONS", "/nowhere", kPage).status, 404);
  srv.stop();
}

TEST(CorsServer, EveryAnswerToAnAllowedOriginCarriesIt) {
  ApiServer srv(tiny(), config({"http://app.example", "http://other.example"}));
  srv.start();
  const HttpResponse ok = ask(srv.port(), "POST", "/v1/completions", kPage + kKey, kBody);
  EXPECT_EQ(ok.status, 200) << ok.body;
  expect_cors(ok, "http://app.example");
  const std::string stream = R"({"prompt": "ab", "max_tokens": 2, "stream": true})";
  const HttpResponse sse = ask(srv.port(), "POST", "/v1/completions", kPage + kKey, stream);
  EXPECT_EQ(sse.status, 200);
  EXPECT_EQ(sse.header("content-type"), "text/event-stream");
  expect_cors(sse, "http://app.example");
  const HttpResponse no_key = ask(srv.port(), "POST", "/v1/completions", kPage, kBody);
  EXPECT_EQ(no_key.status, 401);
  expect_cors(no_key, "http://app.example");
  const HttpResponse bad = ask(srv.port(), "POST", "/v1/completions", kPage + kKey,
                               R"({"prompt": "ab", "grammar": "root ::= x"})");
  EXPECT_EQ(bad.status, 400);
  expect_cors(bad, "http://app.example");
  expect_cors(ask(srv.port(), "GET", "/nowhere", kPage), "http://app.example");
  expect_cors(ask(srv.port(), "GET", "/v1/models", "Origin: http://other.example\r\n" + kKey),
              "http://other.example");
  const HttpResponse evil =
      ask(srv.port(), "POST", "/v1/completions", "Origin: http://evil.example\r\n" + kKey, kBody);
  EXPECT_EQ(evil.status, 200);  // answered, but the browser keeps it from the page
  EXPECT_EQ(evil.header("access-control-allow-origin"), "");
  EXPECT_EQ(evil.header("vary"), "");
  srv.stop();
}

TEST(CorsServer, AnyOriginAndOff) {
  ApiServer any(tiny(), config({"*"}));
  any.start();
  const HttpResponse r = ask(any.port(), "POST", "/v1/completions",
                             "Origin: http://anything.example\r\n" + kKey, kBody);
  EXPECT_EQ(r.status, 200);
  expect_cors(r, "*");
  EXPECT_EQ(ask(any.port(), "OPTIONS", "/v1/completions", "Origin: null\r\n").status, 204);
  any.stop();
  // Off: no CORS header, and OPTIONS is what it always was (401 without the key, else 405).
  ApiServer off(tiny(), config({}));
  off.start();
  const HttpResponse post = ask(off.port(), "POST", "/v1/completions", kPage + kKey, kBody);
  EXPECT_EQ(post.status, 200);
  EXPECT_EQ(post.header("access-control-allow-origin"), "");
  EXPECT_EQ(ask(off.port(), "OPTIONS", "/v1/completions", kPage).status, 401);
  EXPECT_EQ(ask(off.port(), "OPTIONS", "/v1/completions", kPage + kKey).status, 405);
  off.stop();
  EXPECT_THROW(ApiServer(tiny(), config({"http://app.example/"})), Error);
}

TEST(ModelsById, TheModelObjectOrA404) {
  ServerConfig cfg = config({});
  cfg.model_id = "org/tiny";
  ApiServer srv(tiny(), cfg);
  srv.start();
  const HttpResponse list = ask(srv.port(), "GET", "/v1/models", kKey);
  ASSERT_EQ(list.status, 200);
  for (const std::string path : {"/v1/models/org/tiny", "/v1/models/org%2Ftiny"}) {
    const HttpResponse r = ask(srv.port(), "GET", path, kKey);
    ASSERT_EQ(r.status, 200) << path << " " << r.body;
    EXPECT_EQ(json::parse(r.body), json::parse(list.body)["data"][0]) << path;
  }
  const HttpResponse unknown = ask(srv.port(), "GET", "/v1/models/gpt-4o", kKey);
  EXPECT_EQ(unknown.status, 404);
  const json e = json::parse(unknown.body).at("error");
  EXPECT_EQ(e.at("type"), "invalid_request_error");
  EXPECT_EQ(e.at("code"), 404);
  EXPECT_EQ(e.at("message"), "model 'gpt-4o' is not served here (this server serves 'org/tiny')");
  EXPECT_EQ(ask(srv.port(), "GET", "/v1/models/org/tiny", "").status, 401);
  EXPECT_EQ(ask(srv.port(), "POST", "/v1/models/org/tiny", kKey, "{}").status, 405);
  EXPECT_EQ(ask(srv.port(), "GET", "/v1/models/", kKey).status, 404);
  const HttpResponse odd = ask(srv.port(), "GET", "/v1/models/%0A%FF", kKey);
  EXPECT_EQ(odd.status, 404);
  EXPECT_NO_THROW(json::parse(odd.body)) << odd.body;
  srv.stop();
}

}  // namespace
}  // namespace fasa::server
