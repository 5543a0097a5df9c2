// `fasa serve`'s ApiServer against the holes an abuse pass found, on the tiny byte model (no
// download needed): a client's field name cannot add a header or a second response, JSON
// bodies need a JSON Content-Type, the prompt cache tells no caller (API key, cache_salt) what
// another sent, log lines stay one bounded line, the calibration is shown by name and sha256,
// and the Bearer scheme is case-insensitive.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/core/sha256.h"
#include "fasa/server/http_response.h"
#include "fasa/server/server.h"
#include "support/http_client.h"
#include "support/tiny_byte_model.h"
#include "support/tiny_calibration.h"

namespace fasa::server {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using test::HttpClient;
using test::HttpResponse;

std::shared_ptr<const Model> tiny() {
  static std::shared_ptr<const Model> m = test::tiny_byte_model("api_hardening.gguf", false);
  return m;
}

ServerConfig config() {
  ServerConfig cfg;
  cfg.http.port = 0;
  cfg.model_id = "tiny";
  cfg.max_tokens = 4;
  cfg.scheduler.parallel = 1;
  cfg.scheduler.session.n_ctx = 256;
  cfg.scheduler.prompt_cache_bytes = 64 << 20;
  cfg.log_requests = false;
  return cfg;
}

std::string post(const std::string& path, const std::string& body,
                 const std::string& headers = "Content-Type: application/json\r\n") {
  return fmt::format("POST {} HTTP/1.1\r\nHost: t\r\n{}Content-Length: {}\r\n\r\n{}", path, headers,
                     body.size(), body);
}

// One request on its own connection (closed after it): the raw bytes of the answer.
std::string exchange(int port, const std::string& request) {
  HttpClient c(port, 30s);
  const size_t head_end = request.find("\r\n\r\n");
  c.send(request.substr(0, head_end) + "\r\nConnection: close" + request.substr(head_end));
  return c.read_until_close();
}

HttpResponse ask(int port, const std::string& request) {
  HttpClient c(port, 30s);
  c.send(request);
  return c.read_response();
}

// The prompt tokens the cache gave a greedy completion of `prompt` with `headers` and `extra`
// fields.
int cached_tokens(int port, const std::string& prompt, const std::string& headers,
                  const json& extra = json::object()) {
  json body = {{"prompt", prompt}, {"max_tokens", 1}, {"temperature", 0}};
  body.update(extra);
  const HttpResponse r = ask(port, post("/v1/completions", body.dump(),
                                        "Content-Type: application/json\r\n" + headers));
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200) return -1;
  return json::parse(r.body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
}

const std::string kDoc(120, 'q');  // a prompt the cache keeps whole

TEST(ApiHardening, AFieldNameWithCrLfCannotAddAHeaderOrASecondResponse) {
  ApiServer srv(tiny(), config());
  srv.start();
  const std::string name =
      "\r\nAccess-Control-Allow-Origin: *\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK";
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "whole");
    const json body = {{"prompt", "ab"}, {"max_tokens", 1}, {"stream", stream}, {name, 1}};
    const std::string bytes = exchange(srv.port(), post("/v1/completions", body.dump()));
    EXPECT_EQ(http::detail::response_problem(bytes), "") << bytes;
    EXPECT_EQ(bytes.rfind("HTTP/1.1 200 ", 0), 0u) << bytes;
    const std::string head = bytes.substr(0, bytes.find("\r\n\r\n"));
    EXPECT_EQ(head.find("\r\nAccess-Control-Allow-Origin:"), std::string::npos) << head;
    EXPECT_NE(head.find("X-Fasa-Ignored-Fields: %0D%0AAccess-Control-Allow-Origin:%20*%0D%0A"),
              std::string::npos)
        << head;
  }
}

TEST(ApiHardening, JsonBodiesNeedAJsonContentType) {
  ApiServer srv(tiny(), config());
  srv.start();
  const std::string body = R"({"prompt": "ab", "max_tokens": 1})";
  for (const std::string path :
       {"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"}) {
    for (const std::string h :
         {"Content-Type: text/plain\r\n", "", "Content-Type: application/x-www-form-urlencoded\r\n",
          "Content-Type: application/jsonp\r\n"}) {
      SCOPED_TRACE(path + " with '" + h + "'");
      const HttpResponse r = ask(srv.port(), post(path, body, h));
      EXPECT_EQ(r.status, 415);
      EXPECT_NE(r.body.find("application/json"), std::string::npos) << r.body;
    }
  }
  for (const std::string h : {"Content-Type: application/json; charset=utf-8\r\n",
                              "Content-Type: Application/JSON\r\n"}) {
    EXPECT_EQ(ask(srv.port(), post("/v1/completions", body, h)).status, 200) << h;
  }
}

TEST(ApiHardening, TheBearerSchemeIsCaseInsensitiveAndEveryKeyWorks) {
  ServerConfig cfg = config();
  cfg.api_keys = {"k-one", "k-two"};
  ApiServer srv(tiny(), cfg);
  srv.start();
  const std::string body = R"({"prompt": "ab", "max_tokens": 1})";
  auto status = [&](const std::string& auth) {
    return ask(srv.port(),
               post("/v1/completions", body, "Content-Type: application/json\r\n" + auth))
        .status;
  };
  EXPECT_EQ(status("Authorization: Bearer k-one\r\n"), 200);
  EXPECT_EQ(status("Authorization: bearer k-two\r\n"), 200);
  EXPECT_EQ(status("Authorization: BEARER   k-one\r\n"), 200);
  EXPECT_EQ(status("Authorization: Bearer k-three\r\n"), 401);
  EXPECT_EQ(status("Authorization: Basic k-one\r\n"), 401);
  EXPECT_EQ(status("Authorization: Bearer \r\n"), 401);
  EXPECT_EQ(status(""), 401);
}

TEST(ApiHardening, TwoKeysCannotObserveEachOthersPrompts) {
  ServerConfig cfg = config();
  cfg.api_keys = {"alice", "bob"};
  ApiServer srv(tiny(), cfg);
  srv.start();
  const std::string alice = "Authorization: Bearer alice\r\n",
                    bob = "Authorization: Bearer bob\r\n";
  EXPECT_EQ(cached_tokens(srv.port(), kDoc, alice), 0);
  EXPECT_EQ(cached_tokens(srv.port(), kDoc, bob), 0);  // alice's prompt is not bob's to see
  const int own = cached_tokens(srv.port(), kDoc, alice);
  EXPECT_GT(own, 0);                                     // (the cache works: alice's own entry)
  EXPECT_EQ(cached_tokens(srv.port(), kDoc, bob), own);  // bob's own entry, made above
}

TEST(ApiHardening, PromptCacheSharedIsOneTenant) {
  ServerConfig cfg = config();
  cfg.api_keys = {"alice", "bob"};
  cfg.prompt_cache_shared = true;
  ApiServer srv(tiny(), cfg);
  srv.start();
  EXPECT_EQ(cached_tokens(srv.port(), kDoc, "Authorization: Bearer alice\r\n"), 0);
  EXPECT_GT(cached_tokens(srv.port(), kDoc, "Authorization: Bearer bob\r\n"), 0);
}

TEST(ApiHardening, TwoSaltsCannotObserveEachOthersPrompts) {
  ApiServer srv(tiny(), config());
  srv.start();
  const json s1 = {{"cache_salt", "tenant-1"}}, s2 = {{"cache_salt", "tenant-2"}};
  EXPECT_EQ(cached_tokens(srv.port(), kDoc, "", s1), 0);
  EXPECT_EQ(cached_tokens(srv.port(), kDoc, "", s2), 0);
  EXPECT_EQ(cached_tokens(srv.port(), kDoc, ""), 0);  // no salt is a scope of its own
  EXPECT_GT(cached_tokens(srv.port(), kDoc, "", s1), 0);
  // Echo scoring keeps prompts per scope too (its time would tell otherwise).
  const json echo = {{"prompt", kDoc},
                     {"max_tokens", 0},
                     {"echo", true},
                     {"logprobs", 0},
                     {"cache_salt", "tenant-3"}};
  EXPECT_EQ(ask(srv.port(), post("/v1/completions", echo.dump())).status, 200);
  const HttpResponse bad =
      ask(srv.port(), post("/v1/completions", R"({"prompt": "a", "cache_salt": ""})"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("cache_salt"), std::string::npos) << bad.body;
}

TEST(ApiHardening, LogLinesAreOneBoundedLineWhateverTheClientSent) {
  ServerConfig cfg = config();
  cfg.log_requests = true;
  ApiServer srv(tiny(), cfg);
  srv.start();
  testing::internal::CaptureStderr();
  const json forged = {{"prompt", "ab"},
                       {"max_tokens", 1},
                       {"model", "tiny\nfasa serve: 10.0.0.1:1 POST /v1/completions 200 0.1 s"}};
  EXPECT_EQ(ask(srv.port(), post("/v1/completions", forged.dump())).status, 404);
  const json field = {{"prompt", "ab"}, {"max_tokens", 1}, {"a\r\nfasa serve: forged", 1}};
  EXPECT_EQ(ask(srv.port(), post("/v1/completions", field.dump())).status, 200);
  const json policy = {{"prompt", "ab"}, {"fasa", {{"policy", std::string(200189, 'p')}}}};
  EXPECT_EQ(ask(srv.port(), post("/v1/completions", policy.dump())).status, 400);
  srv.stop();
  const std::string log = testing::internal::GetCapturedStderr();
  std::vector<std::string> lines;
  for (size_t at = 0; at < log.size();) {
    const size_t end = log.find('\n', at);
    lines.push_back(log.substr(at, end - at));
    at = end == std::string::npos ? log.size() : end + 1;
  }
  ASSERT_EQ(lines.size(), 3u) << log;
  for (const std::string& l : lines) {
    EXPECT_EQ(l.rfind("fasa serve: 127.0.0.1:", 0), 0u) << l;
    EXPECT_EQ(l.find('\r'), std::string::npos) << l;
    EXPECT_LT(l.size(), 1500u);
  }
  EXPECT_NE(lines[0].find("\\x0afasa serve: 10.0.0.1"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("more bytes)"), std::string::npos) << lines[2];
}

TEST(ApiHardening, TheCalibrationIsShownByFileNameAndSha256NeverItsPath) {
  const std::string calib = test::calibrate_tiny(tiny(), "api_hardening_calib.json");
  const std::string dir = std::filesystem::path(calib).parent_path().string();
  ServerConfig cfg = config();
  cfg.policy.calib = calib;
  cfg.policy.spec = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,budget=16,calib=" + calib;
  ApiServer srv(tiny(), cfg);
  srv.start();
  const HttpResponse r =
      ask(srv.port(), post("/v1/completions", R"({"prompt": "abcdef", "max_tokens": 2})"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find(dir), std::string::npos) << r.body;
  const json f = json::parse(r.body)["fasa"];
  EXPECT_NE(f["policy"].get<std::string>().find("calib=api_hardening_calib.json"),
            std::string::npos)
      << f;
  EXPECT_EQ(f["calibration"]["kind"], "file");
  EXPECT_EQ(f["calibration"]["file"], "api_hardening_calib.json");
  EXPECT_EQ(f["calibration"]["sha256"], sha256_file_hex(calib));
  // A request's policy error that names the calibration names it by file name too.
  const HttpResponse e =
      ask(srv.port(), post("/v1/completions", R"({"prompt": "ab", "fasa": {"budget": -3}})"));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.body.find(dir), std::string::npos) << e.body;
  const HttpResponse plain =
      ask(srv.port(), post("/v1/completions",
                           R"({"prompt": "ab", "max_tokens": 1, "fasa": {"policy": "full"}})"));
  ASSERT_EQ(plain.status, 200);
  EXPECT_FALSE(json::parse(plain.body)["fasa"].contains("calibration"));
}

// No --calib and none stored: a calibrated policy calibrates online on the request's prompt,
// and the answer says so.
TEST(ApiHardening, WithoutACalibrationFasaCalibratesOnlineAndSaysSo) {
  ServerConfig cfg = config();
  cfg.policy.spec = "fasa:budget=4,dense_layers=none,calib=online";
  ApiServer srv(tiny(), cfg);
  srv.start();
  const HttpResponse r = ask(srv.port(), post("/v1/completions",
                                              R"({"prompt": "abcdefghijklmnopqrstuvwxyz",
                                                  "max_tokens": 3, "fasa": {"budget": 4}})"));
  ASSERT_EQ(r.status, 200) << r.body;
  const json f = json::parse(r.body)["fasa"];
  EXPECT_NE(f["policy"].get<std::string>().find("calib=online"), std::string::npos) << f;
  EXPECT_EQ(f["calibration"], json({{"kind", "online"}})) << f;
  const HttpResponse ds =
      ask(srv.port(), post("/v1/completions", R"({"prompt": "abcdefghij", "max_tokens": 2,
                                              "fasa": {"policy": "double-sparsity", "budget": 4}})"));
  ASSERT_EQ(ds.status, 200) << ds.body;
  EXPECT_EQ(json::parse(ds.body)["fasa"]["calibration"]["kind"], "online") << ds.body;
}

}  // namespace
}  // namespace fasa::server
