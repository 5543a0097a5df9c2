// The HTTP server end to end: a Server on an ephemeral port with a test handler, driven by raw
// client sockets (support/http_client.h) so every byte on the wire is the test's choice.
#include "fasa/server/http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/server/http_response.h"
#include "support/expect_error.h"
#include "support/http_client.h"

using fasa::http::Handler;
using fasa::http::Request;
using fasa::http::ResponseWriter;
using fasa::http::Server;
using fasa::http::ServerOptions;
using fasa::test::HttpClient;
using fasa::test::HttpResponse;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;
using namespace std::chrono_literals;

constexpr Millis kWait = 1500ms;  // the longest a handler-side wait in these tests takes

std::string request_json(const Request& req) {
  json headers = json::array();
  for (const auto& [name, value] : req.headers) headers.push_back({name, value});
  return json{{"method", req.method}, {"path", req.path}, {"query", req.query},
              {"headers", headers},   {"body", req.body}, {"peer", req.peer}}
      .dump();
}

// Answers every request with a JSON description of it.
void echo(const Request& req, ResponseWriter& w) {
  w.send(200, "application/json", request_json(req), {{"X-Echo", "yes"}});
}

// Waits until `done` holds or the deadline passes (for what a handler thread records).
bool eventually(const std::function<bool()>& done, Millis timeout = kWait) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

std::unique_ptr<Server> start_server(Handler handler, ServerOptions opts = {}) {
  opts.port = 0;
  auto server = std::make_unique<Server>(opts, std::move(handler));
  server->start();
  return server;
}

const std::string kGet = "GET /a HTTP/1.1\r\nHost: t\r\n\r\n";

// The status and JSON error body the server refuses `raw` with; expects it to close.
void expect_refused(const std::string& raw, int status, const std::string& needle,
                    ServerOptions opts = {}) {
  std::atomic<int> handled{0};
  auto server = start_server(
      [&](const Request& req, ResponseWriter& w) {
        ++handled;
        echo(req, w);
      },
      opts);
  HttpClient c(server->port());
  c.send(raw);
  const HttpResponse r = c.read_response();
  EXPECT_EQ(r.status, status) << raw.substr(0, 80);
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_EQ(r.header("content-type"), "application/json");
  const json body = json::parse(r.body, nullptr, false);
  EXPECT_EQ(body["error"]["code"], status) << r.body;
  EXPECT_NE(body["error"]["message"].get<std::string>().find(needle), std::string::npos) << r.body;
  EXPECT_TRUE(c.closed_by_server());
  EXPECT_EQ(handled.load(), 0);
}

}  // namespace

TEST(HttpServer, GetRoundTrip) {
  auto server = start_server(echo);
  HttpClient c(server->port());
  c.send("GET /v1/models?x=1&y=%20 HTTP/1.1\r\nHost: t\r\nX-Custom:   Mixed Case  \r\n\r\n");
  const HttpResponse r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(r.header("connection"), "keep-alive");
  EXPECT_EQ(r.header("x-echo"), "yes");
  const json j = json::parse(r.body);
  EXPECT_EQ(j["method"], "GET");
  EXPECT_EQ(j["path"], "/v1/models");
  EXPECT_EQ(j["query"], "x=1&y=%20");
  EXPECT_EQ(j["headers"][1], json({"x-custom", "Mixed Case"}));
  EXPECT_EQ(j["body"], "");
  EXPECT_EQ(j["peer"].get<std::string>().rfind("127.0.0.1:", 0), 0u) << j["peer"];
}

TEST(HttpServer, PostBodyIsEchoed) {
  auto server = start_server(echo);
  HttpClient c(server->port());
  const std::string body = R"({"prompt": "hi\r\n\r\nthere"})";
  c.send("POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body);
  const HttpResponse r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["body"], body);
  EXPECT_EQ(json::parse(r.body)["method"], "POST");
}

TEST(HttpServer, BodyArrivingInPiecesAndBareLfHead) {
  auto server = start_server(echo);
  HttpClient c(server->port());
  c.send("POST /p HTTP/1.1\nContent-Length: 10\n\n01234");
  std::this_thread::sleep_for(20ms);
  c.send("56789");
  const HttpResponse r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["body"], "0123456789");
}

TEST(HttpServer, TwoRequestsOnOneKeepAliveConnection) {
  auto server = start_server(echo);
  HttpClient c(server->port());
  for (const char* path : {"/first", "/second"}) {
    c.send(std::string("GET ") + path + " HTTP/1.1\r\nHost: t\r\n\r\n");
    const HttpResponse r = c.read_response();
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(json::parse(r.body)["path"], path);
    EXPECT_EQ(server->open_connections(), 1);
  }
}

TEST(HttpServer, PipelinedRequestsInOneWrite) {
  auto server = start_server(echo);
  HttpClient c(server->port());
  c.send("POST /one HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc\r\nGET /two?q HTTP/1.1\r\n\r\n");
  const HttpResponse first = c.read_response();
  const HttpResponse second = c.read_response();
  ASSERT_EQ(first.status, 200);
  ASSERT_EQ(second.status, 200);
  EXPECT_EQ(json::parse(first.body)["body"], "abc");
  EXPECT_EQ(json::parse(second.body)["path"], "/two");
  EXPECT_EQ(json::parse(second.body)["query"], "q");
}

TEST(HttpServer, ConnectionCloseIsHonoured) {
  auto server = start_server(echo);
  HttpClient c(server->port());
  c.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
  const HttpResponse r = c.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(c.closed_by_server());
}

TEST(HttpServer, Http10ClosesUnlessAskedToKeepAlive) {
  auto server = start_server(echo);
  HttpClient plain(server->port());
  plain.send("GET / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(plain.read_response().header("connection"), "close");
  EXPECT_TRUE(plain.closed_by_server());

  HttpClient kept(server->port());
  kept.send("GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_EQ(kept.read_response().header("connection"), "keep-alive");
  kept.send("GET /2 HTTP/1.0\r\n\r\n");
  const HttpResponse r = kept.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["path"], "/2");
}

TEST(HttpServer, ExpectContinueGetsAnInterimResponse) {
  auto server = start_server(echo);
  HttpClient c(server->port());
  c.send("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 100);
  c.send("ok");
  const HttpResponse r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["body"], "ok");
}

TEST(HttpServer, MalformedRequestLineIs400) {
  expect_refused("GARBAGE\r\n\r\n", 400, "request line");
}

TEST(HttpServer, BadContentLengthIs400) {
  expect_refused("POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400, "Content-Length");
}

TEST(HttpServer, ChunkedRequestBodyIs411) {
  expect_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 411,
                 "chunked");
}

TEST(HttpServer, PostWithoutLengthIs411) {
  expect_refused("POST / HTTP/1.1\r\n\r\n", 411, "Content-Length");
}

TEST(HttpServer, BodyOverTheLimitIs413WithoutReadingIt) {
  ServerOptions opts;
  opts.max_body_bytes = 100;
  expect_refused("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413, "limit of 100", opts);
}

TEST(HttpServer, HugeHeaderIs431) {
  ServerOptions opts;
  opts.max_header_bytes = 1024;
  expect_refused("GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n", 431,
                 "1024 bytes", opts);
  // A head that never ends is refused once it passes the limit, too.
  expect_refused("GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'a'), 431, "1024", opts);
}

TEST(HttpServer, Http2Is505) { expect_refused("GET / HTTP/2.0\r\n\r\n", 505, "HTTP/2.0"); }

TEST(HttpServer, SlowRequestIs408) {
  ServerOptions opts;
  opts.request_timeout_ms = 200;
  expect_refused("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nhalf", 408, "200 ms", opts);
}

TEST(HttpServer, IdleKeepAliveConnectionIsClosedSilently) {
  ServerOptions opts;
  opts.idle_timeout_ms = 100;
  auto server = start_server(echo, opts);
  HttpClient c(server->port());
  c.send(kGet);
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_TRUE(c.closed_by_server());  // no bytes: no 408 for an idle connection
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0; }));
}

TEST(HttpServer, ConnectionsOverTheLimitGet503) {
  ServerOptions opts;
  opts.max_connections = 1;
  auto server = start_server(echo, opts);
  HttpClient held(server->port());
  held.send(kGet);
  ASSERT_EQ(held.read_response().status, 200);  // now counted as open

  HttpClient extra(server->port());
  const HttpResponse r = extra.read_response();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "server_error");
  EXPECT_TRUE(extra.closed_by_server());

  held.send(kGet);  // the admitted connection is unaffected
  EXPECT_EQ(held.read_response().status, 200);
}

// One client (IP address) holding its cap of idle connections gets 429 for more; another client
// (127.0.0.2: every 127.x address reaches a server on 127.0.0.1) is served as before.
TEST(HttpServer, ConnectionsOverThePerClientCapGet429OthersAreServed) {
  ServerOptions opts;
  opts.max_connections_per_client = 2;
  auto server = start_server(echo, opts);
  std::vector<std::unique_ptr<HttpClient>> idle;
  for (int i = 0; i < 2; ++i) {
    idle.push_back(std::make_unique<HttpClient>(server->port()));
    idle.back()->send(kGet);
    ASSERT_EQ(idle.back()->read_response().status, 200);  // admitted: now counted
  }
  for (int i = 0; i < 3; ++i) {  // more than the cap: each refused, the server unharmed
    HttpClient extra(server->port());
    const HttpResponse r = extra.read_response();
    EXPECT_EQ(r.status, 429);
    EXPECT_EQ(r.header("retry-after"), "1");
    const json body = json::parse(r.body, nullptr, false);
    EXPECT_NE(body["error"]["message"].get<std::string>().find(
                  "too many connections from 127.0.0.1 (the limit per client is 2)"),
              std::string::npos)
        << r.body;
    EXPECT_TRUE(extra.closed_by_server());
  }

  HttpClient other(server->port(), kWait, "127.0.0.2");
  other.send(kGet);
  const HttpResponse r = other.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["peer"].get<std::string>().rfind("127.0.0.2:", 0), 0u) << r.body;

  idle[0]->close();  // a slot of the first client frees once its connection ends
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 2; }));
  HttpClient again(server->port());
  again.send(kGet);
  EXPECT_EQ(again.read_response().status, 200);
}

// With every regular slot taken, reserved connections still answer the reserved paths (one
// request each, then close); other paths get 503; with the reserve full too, 503 at once.
TEST(HttpServer, ReservedConnectionsAnswerOnlyReservedPaths) {
  ServerOptions opts;
  opts.max_connections = 1;
  opts.max_connections_per_client = 0;  // no per-client cap: one test client fills everything
  opts.reserved_connections = 1;
  opts.reserved_paths = {"/health"};
  opts.reserved_timeout_ms = 60000;  // the idle reserve holder below stays until the end
  auto server = start_server(echo, opts);
  HttpClient held(server->port());
  held.send(kGet);
  ASSERT_EQ(held.read_response().status, 200);

  for (int i = 0; i < 2; ++i) {  // the reserve is freed after each use
    HttpClient health(server->port());
    health.send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    const HttpResponse r = health.read_response();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(json::parse(r.body)["path"], "/health");
    EXPECT_EQ(r.header("connection"), "close");
    EXPECT_TRUE(health.closed_by_server());
    EXPECT_TRUE(eventually([&] { return server->open_connections() == 1; }));
  }

  HttpClient other_path(server->port());
  other_path.send(kGet);
  const HttpResponse r = other_path.read_response();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.header("retry-after"), "1");
  EXPECT_NE(r.body.find("only /health is answered now"), std::string::npos) << r.body;
  EXPECT_TRUE(other_path.closed_by_server());
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 1; }));

  // An idle holder of the reserve does not keep out a client that asks at once: it is shed.
  HttpClient reserve_holder(server->port());
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 2; }));
  std::this_thread::sleep_for(150ms);  // past the grace in which a silent newcomer sheds nothing
  HttpClient asker(server->port());
  asker.send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(asker.read_response().status, 200);
  EXPECT_TRUE(reserve_holder.closed_by_server());
}

// A reserve whose connections are all answering (none idle to shed) refuses the next one.
TEST(HttpServer, ABusyReserveRefusesWith503) {
  ServerOptions opts;
  opts.max_connections = 1;
  opts.max_connections_per_client = 0;
  opts.reserved_connections = 1;
  opts.reserved_paths = {"/health", "/slow"};
  opts.reserved_timeout_ms = 60000;
  std::atomic<bool> release{false}, in_slow{false};
  auto server = start_server(
      [&](const Request& req, ResponseWriter& w) {
        if (req.path == "/slow") {
          in_slow = true;
          eventually([&] { return release.load(); }, 10s);
        }
        echo(req, w);
      },
      opts);
  HttpClient held(server->port());
  held.send(kGet);
  ASSERT_EQ(held.read_response().status, 200);
  HttpClient slow(server->port(), 10s);
  slow.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(eventually([&] { return in_slow.load(); }));
  HttpClient beyond(server->port());
  EXPECT_EQ(beyond.read_response().status, 503);
  EXPECT_TRUE(beyond.closed_by_server());
  release = true;
  EXPECT_EQ(slow.read_response().status, 200);
}

// Idle connections from many addresses (each under the per-client cap) fill every slot and the
// reserve, and keep coming; a health probe that asks at once is still answered every time.
TEST(HttpServer, IdleFloodsFromManyAddressesCannotHoldTheReserve) {
  ServerOptions opts;
  opts.max_connections = 4;
  opts.max_connections_per_client = 2;
  opts.reserved_connections = 2;
  opts.reserved_paths = {"/health"};
  opts.request_timeout_ms = 60000;
  opts.reserved_timeout_ms = 60000;
  auto server = start_server(echo, opts);
  std::vector<std::unique_ptr<HttpClient>> flood;
  auto open_idle = [&](int i) {
    flood.push_back(
        std::make_unique<HttpClient>(server->port(), kWait, fmt::format("127.0.0.{}", 2 + i % 50)));
  };
  for (int i = 0; i < 6; ++i) open_idle(i);
  ASSERT_TRUE(eventually([&] { return server->open_connections() == 6; }));
  for (int i = 0; i < 20; ++i) {
    open_idle(6 + i);  // one more idle connection, with every slot and the reserve idle-held
    // Past the grace in which a connection that has sent nothing yet cannot be shed (so the
    // probe may shed one even if the server accepts it before its request arrives).
    std::this_thread::sleep_for(150ms);
    HttpClient probe(server->port(), kWait, "127.0.0.200");
    probe.send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_EQ(probe.read_response().status, 200) << "probe " << i;
  }
}

// A handler's header holding CR LF (a client's bytes, say) is never written: the client gets
// one well-formed 500 instead of a split response, whole or streamed, and the server goes on.
TEST(HttpServer, AHeaderWithCrLfIsRefusedWithOneWellFormed500) {
  auto server = start_server([](const Request& req, ResponseWriter& w) {
    const fasa::http::Headers bad = {{"X-Name", "a\r\nAccess-Control-Allow-Origin: *"}};
    if (req.path == "/stream") {
      if (w.begin_stream(200, "text/event-stream", bad)) w.end_stream();
      return;
    }
    w.send(200, "text/plain", "hi", bad);
  });
  for (const char* path : {"/whole", "/stream"}) {
    HttpClient c(server->port());
    c.send(fmt::format("GET {} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", path));
    const std::string bytes = c.read_until_close();
    EXPECT_EQ(fasa::http::detail::response_problem(bytes), "") << bytes;
    EXPECT_EQ(bytes.rfind("HTTP/1.1 500 ", 0), 0u) << bytes;
    EXPECT_EQ(bytes.find("Access-Control"), std::string::npos) << bytes;
  }
  HttpClient after(server->port());
  after.send(kGet);
  EXPECT_EQ(after.read_response().status, 500);  // (this handler refuses every answer)
}

// A new connection that never sends a request holds its slot only for the request timeout, not
// the (longer) keep-alive idle timeout; it is closed without an answer.
TEST(HttpServer, ConnectionThatSendsNothingIsClosedAfterTheRequestTimeout) {
  ServerOptions opts;
  opts.request_timeout_ms = 200;
  opts.idle_timeout_ms = 60000;
  auto server = start_server(echo, opts);
  HttpClient silent(server->port(), 10s);
  EXPECT_TRUE(silent.closed_by_server());
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0; }));
}

TEST(HttpServer, HandlerThatThrowsIs500AndTheServerGoesOn) {
  auto server = start_server([](const Request& req, ResponseWriter& w) {
    if (req.path == "/throw") throw std::runtime_error("model exploded");
    echo(req, w);
  });
  HttpClient c(server->port());
  c.send("GET /throw HTTP/1.1\r\n\r\n");
  const HttpResponse r = c.read_response();
  ASSERT_EQ(r.status, 500);
  EXPECT_EQ(json::parse(r.body)["error"]["message"], "model exploded");
  c.send(kGet);
  EXPECT_EQ(c.read_response().status, 200);
  HttpClient other(server->port());
  other.send(kGet);
  EXPECT_EQ(other.read_response().status, 200);
}

TEST(HttpServer, HandlerThatDoesNotAnswerIs500) {
  auto server = start_server([](const Request&, ResponseWriter&) {});
  HttpClient c(server->port());
  c.send(kGet);
  const HttpResponse r = c.read_response();
  ASSERT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("did not answer"), std::string::npos) << r.body;
}

TEST(HttpServer, ChunkedStreamIsDeChunkedByTheClient) {
  auto server = start_server([](const Request& req, ResponseWriter& w) {
    if (req.path != "/stream") return echo(req, w);
    ASSERT_TRUE(w.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}}));
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(w.write_chunk("data: " + std::to_string(i) + "\n\n"));
    EXPECT_TRUE(w.write_chunk(""));  // nothing to send, and not the end of the stream
    w.end_stream();
  });
  HttpClient c(server->port());
  c.send("GET /stream HTTP/1.1\r\n\r\n");
  const HttpResponse r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("transfer-encoding"), "chunked");
  EXPECT_EQ(r.header("content-type"), "text/event-stream");
  EXPECT_EQ(r.header("cache-control"), "no-cache");
  EXPECT_EQ(r.body, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
  c.send(kGet);  // the connection is still usable after the stream
  EXPECT_EQ(c.read_response().status, 200);
}

TEST(HttpServer, StreamToAnHttp10ClientEndsWithTheConnection) {
  auto server = start_server([](const Request&, ResponseWriter& w) {
    w.begin_stream(200, "text/plain");
    w.write_chunk("ab");
    w.write_chunk("cd");
    w.end_stream();
  });
  HttpClient c(server->port());
  c.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  const HttpResponse r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("transfer-encoding"), "");
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_EQ(r.body, "abcd");
}

TEST(HttpServer, ClientGoneIsDetectedAfterTheClientCloses) {
  std::atomic<bool> entered{false}, returned{false}, gone{false};
  auto server = start_server([&](const Request&, ResponseWriter& w) {
    entered = true;
    const auto deadline = Clock::now() + 3s;
    while (!w.client_gone() && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
    gone = w.client_gone();
    returned = true;
    w.send(200, "text/plain", "late");
  });
  HttpClient c(server->port());
  c.send(kGet);
  ASSERT_TRUE(eventually([&] { return entered.load(); }));
  // Bytes of a pipelined next request, waiting unread in the socket, are not a gone client.
  c.send(kGet);
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(returned.load());
  c.close();
  ASSERT_TRUE(eventually([&] { return returned.load(); }));
  EXPECT_TRUE(gone.load());  // the handler saw the client go, before its own 3 s deadline
}

TEST(HttpServer, WriteChunkFailsOnceTheClientClosed) {
  std::atomic<bool> failed{false};
  std::atomic<bool> done{false};
  auto server = start_server([&](const Request&, ResponseWriter& w) {
    w.begin_stream(200, "text/plain");
    const std::string chunk(16 << 10, 'x');
    const auto deadline = Clock::now() + 3s;
    while (Clock::now() < deadline) {
      if (!w.write_chunk(chunk)) {
        failed = !w.write_chunk("later writes fail at once");
        break;
      }
    }
    EXPECT_TRUE(w.client_gone());
    done = true;
  });
  {
    HttpClient c(server->port());
    c.send(kGet);
    std::this_thread::sleep_for(20ms);
  }  // closed with unread bytes: the server's writes fail
  ASSERT_TRUE(eventually([&] { return done.load(); }));
  EXPECT_TRUE(failed.load());
}

TEST(HttpServer, StopWithAnIdleKeepAliveConnectionIsPrompt) {
  auto server = start_server(echo);
  HttpClient c(server->port());
  c.send(kGet);
  ASSERT_EQ(c.read_response().status, 200);
  server->stop();  // returns: the idle connection does not hold it
  EXPECT_EQ(server->open_connections(), 0);
  EXPECT_TRUE(c.closed_by_server());
  server->stop();  // idempotent
}

TEST(HttpServer, StopEndsAHandlerThatStreamsUntilItsWritesFail) {
  std::atomic<bool> streaming{false}, ended{false};
  auto server = start_server([&](const Request&, ResponseWriter& w) {
    w.begin_stream(200, "text/plain");
    streaming = true;
    while (w.write_chunk("tick")) std::this_thread::sleep_for(1ms);
    ended = true;
  });
  HttpClient c(server->port());
  c.send(kGet);
  ASSERT_TRUE(eventually([&] { return streaming.load(); }));
  server->stop();  // returns once the handler has: its writes failed
  EXPECT_TRUE(ended.load());
  EXPECT_EQ(server->open_connections(), 0);
}

// drain(): new connections are refused, an idle keep-alive connection is closed at once, and a
// request in flight is answered in full, with Connection: close, before its connection ends.
TEST(HttpServer, DrainRefusesNewConnectionsClosesIdleOnesAndFinishesAnswers) {
  std::atomic<bool> in_slow{false}, release{false};
  auto server = start_server([&](const Request& req, ResponseWriter& w) {
    if (req.path == "/slow") {
      in_slow = true;
      eventually([&] { return release.load(); }, 5000ms);
      w.begin_stream(200, "text/plain");
      for (int i = 0; i < 3; ++i) w.write_chunk("part" + std::to_string(i) + ";");
      w.end_stream();
      return;
    }
    echo(req, w);
  });
  const int port = server->port();
  HttpClient idle(port), busy(port);
  idle.send(kGet);
  ASSERT_EQ(idle.read_response().header("connection"), "keep-alive");
  busy.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(eventually([&] { return in_slow.load(); }));
  server->drain();
  EXPECT_TRUE(idle.closed_by_server());  // no request begun on it: closed without an answer
  // The listening socket is closed: a new connection is refused by the system.
  EXPECT_TRUE(eventually([&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    const bool refused = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0;
    ::close(fd);
    return refused;
  }));
  // The busy one goes on (the idle one's thread, or a probe accepted before the listening socket
  // closed, may take a moment to end).
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 1; }));
  EXPECT_FALSE(busy.closed_by_server());
  release = true;
  const HttpResponse r = busy.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "part0;part1;part2;");
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(busy.closed_by_server());
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0; }));
  server->drain();  // idempotent
  server->stop();
  server->drain();  // after stop: nothing to do
}

TEST(HttpServer, ManySequentialConnectionsAllEnd) {
  auto server = start_server(echo);
  for (int i = 0; i < 200; ++i) {
    HttpClient c(server->port());
    c.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    ASSERT_EQ(c.read_response().status, 200);
  }
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0; }));
}

TEST(HttpServer, BindingAPortInUseNamesIt) {
  auto first = start_server(echo);
  ServerOptions opts;
  opts.port = first->port();
  Server second(opts, echo);
  const std::string where = fmt::format("127.0.0.1:{}", first->port());
  fasa::test::expect_error([&] { second.start(); }, where);
}

TEST(HttpServer, BadHostIsAnError) {
  ServerOptions opts;
  opts.host = "not-an-ip";
  opts.port = 0;
  Server server(opts, echo);
  fasa::test::expect_error([&] { server.start(); }, "not-an-ip");
}

TEST(HttpServer, LocalhostMeansLoopback) {
  ServerOptions opts;
  opts.host = "localhost";
  auto server = start_server(echo, opts);
  HttpClient c(server->port());
  c.send(kGet);
  EXPECT_EQ(c.read_response().status, 200);
}

TEST(HttpErrorJson, IsEscapedAndShaped) {
  const std::string text = fasa::http::error_json(400, "bad \"x\"\n\\", "invalid_request_error");
  const auto j = json::parse(text);
  EXPECT_EQ(j["error"]["message"], "bad \"x\"\n\\");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["code"], 400);
  EXPECT_EQ(json::parse(fasa::http::error_json(500, "\xff"))["error"]["code"], 500);
}

TEST(HttpStatusText, KnownAndUnknownCodes) {
  EXPECT_STREQ(fasa::http::status_text(200), "OK");
  EXPECT_STREQ(fasa::http::status_text(404), "Not Found");
  EXPECT_STREQ(fasa::http::status_text(431), "Request Header Fields Too Large");
  EXPECT_STREQ(fasa::http::status_text(499), "Client Closed Request");
  EXPECT_STREQ(fasa::http::status_text(505), "HTTP Version Not Supported");
  EXPECT_STREQ(fasa::http::status_text(299), "Unknown");
}

// IPv6: "::1" serves IPv6 clients (peer "[::1]:port"); "::" is dual-stack, so the IPv4 client
// reaches it too (peer "127.0.0.1:port"). Skipped where the machine has no IPv6 loopback.
TEST(HttpServer, ListensOnIpv6) {
  ServerOptions opts;
  opts.host = "::1";
  std::unique_ptr<Server> server;
  try {
    server = start_server(echo, opts);
  } catch (const fasa::Error& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(static_cast<uint16_t>(server->port()));
  ASSERT_EQ(inet_pton(AF_INET6, "::1", &sa.sin6_addr), 1);
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::send(fd, kGet.data(), kGet.size(), 0), static_cast<ssize_t>(kGet.size()));
  std::string got;
  char buf[4096];
  while (got.find("}") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_NE(got.find("\"peer\":\"[::1]:"), std::string::npos) << got;

  opts.host = "::";
  auto dual = start_server(echo, opts);
  HttpClient c(dual->port());  // IPv4
  c.send(kGet);
  const HttpResponse r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["peer"].get<std::string>().rfind("127.0.0.1:", 0), 0u);
  EXPECT_THROW(
      {
        ServerOptions bad;
        bad.host = "not-an-address";
        start_server(echo, bad);
      },
      fasa::Error);
}
