// The HTTP server end to end: a Server on an ephemeral port with a test handler, driven by raw
// client sockets so every byte on the wire is the test's choice.
#include "fasa/server/http.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/expect_error.h"

using fasa::http::Handler;
using fasa::http::Request;
using fasa::http::ResponseWriter;
using fasa::http::Server;
using fasa::http::ServerOptions;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;
using namespace std::chrono_literals;

constexpr Millis kWait = 1500ms;  // the longest any read in these tests waits

struct Response {
  int status = 0;                              // 0: no complete response arrived
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // de-chunked
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// A raw TCP client for 127.0.0.1:port.
class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
      ADD_FAILURE() << "connect: " << std::strerror(errno);
  }
  ~Client() { close(); }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  void send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        ADD_FAILURE() << "send: " << std::strerror(errno);
        return;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  }

  // One response (interim 1xx ones included), read as its framing says.
  Response read_response() {
    const auto deadline = Clock::now() + kWait;
    Response r;
    size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (fill(deadline) <= 0) return r;
    }
    const std::string head = take(head_end + 4);
    const int status = std::stoi(head.substr(9, 3));
    parse_headers(head, r);
    if (status >= 200 && !read_body(r, deadline)) return r;
    r.status = status;
    return r;
  }

  // True when the server closes the connection (no further bytes) within kWait.
  bool closed_by_server() {
    const auto deadline = Clock::now() + kWait;
    for (;;) {
      const int n = fill(deadline);
      if (n == 0) return buf_.empty();
      if (n < 0) return false;
    }
  }

 private:
  // Appends what arrives: > 0 bytes read, 0 at EOF, -1 on timeout or error.
  int fill(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
    pollfd pfd{fd_, POLLIN, 0};
    if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(left)) <= 0) return -1;
    char tmp[1 << 16];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n < 0) return -1;
    buf_.append(tmp, static_cast<size_t>(n));
    return static_cast<int>(n);
  }

  bool need(size_t n, Clock::time_point deadline) {
    while (buf_.size() < n) {
      if (fill(deadline) <= 0) return false;
    }
    return true;
  }

  std::string take(size_t n) {
    std::string out = buf_.substr(0, n);
    buf_.erase(0, n);
    return out;
  }

  static void parse_headers(const std::string& head, Response& r) {
    size_t pos = head.find("\r\n") + 2;
    for (size_t end; (end = head.find("\r\n", pos)) != pos; pos = end + 2) {
      const std::string line = head.substr(pos, end - pos);
      std::string name = line.substr(0, line.find(':'));
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = line.substr(line.find(':') + 2);
    }
  }

  bool read_body(Response& r, Clock::time_point deadline) {
    if (r.header("transfer-encoding") == "chunked") return read_chunks(r, deadline);
    if (!r.header("content-length").empty()) {
      const size_t n = std::stoul(r.header("content-length"));
      if (!need(n, deadline)) return false;
      r.body = take(n);
      return true;
    }
    while (fill(deadline) > 0) {  // delimited by the close
    }
    r.body = take(buf_.size());
    return true;
  }

  bool read_chunks(Response& r, Clock::time_point deadline) {
    for (;;) {
      size_t eol;
      while ((eol = buf_.find("\r\n")) == std::string::npos) {
        if (fill(deadline) <= 0) return false;
      }
      const size_t size = std::stoul(take(eol + 2), nullptr, 16);
      if (!need(size + 2, deadline)) return false;
      r.body += take(size);
      if (take(2) != "\r\n") return false;
      if (size == 0) return true;
    }
  }

  int fd_ = -1;
  std::string buf_;  // received, not yet parsed
};

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
  Client c(server->port());
  c.send(raw);
  const Response r = c.read_response();
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
  Client c(server->port());
  c.send("GET /v1/models?x=1&y=%20 HTTP/1.1\r\nHost: t\r\nX-Custom:   Mixed Case  \r\n\r\n");
  const Response r = c.read_response();
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
  Client c(server->port());
  const std::string body = R"({"prompt": "hi\r\n\r\nthere"})";
  c.send("POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body);
  const Response r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["body"], body);
  EXPECT_EQ(json::parse(r.body)["method"], "POST");
}

TEST(HttpServer, BodyArrivingInPiecesAndBareLfHead) {
  auto server = start_server(echo);
  Client c(server->port());
  c.send("POST /p HTTP/1.1\nContent-Length: 10\n\n01234");
  std::this_thread::sleep_for(20ms);
  c.send("56789");
  const Response r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["body"], "0123456789");
}

TEST(HttpServer, TwoRequestsOnOneKeepAliveConnection) {
  auto server = start_server(echo);
  Client c(server->port());
  for (const char* path : {"/first", "/second"}) {
    c.send(std::string("GET ") + path + " HTTP/1.1\r\nHost: t\r\n\r\n");
    const Response r = c.read_response();
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(json::parse(r.body)["path"], path);
    EXPECT_EQ(server->open_connections(), 1);
  }
}

TEST(HttpServer, PipelinedRequestsInOneWrite) {
  auto server = start_server(echo);
  Client c(server->port());
  c.send("POST /one HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc\r\nGET /two?q HTTP/1.1\r\n\r\n");
  const Response first = c.read_response();
  const Response second = c.read_response();
  ASSERT_EQ(first.status, 200);
  ASSERT_EQ(second.status, 200);
  EXPECT_EQ(json::parse(first.body)["body"], "abc");
  EXPECT_EQ(json::parse(second.body)["path"], "/two");
  EXPECT_EQ(json::parse(second.body)["query"], "q");
}

TEST(HttpServer, ConnectionCloseIsHonoured) {
  auto server = start_server(echo);
  Client c(server->port());
  c.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
  const Response r = c.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(c.closed_by_server());
}

TEST(HttpServer, Http10ClosesUnlessAskedToKeepAlive) {
  auto server = start_server(echo);
  Client plain(server->port());
  plain.send("GET / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(plain.read_response().header("connection"), "close");
  EXPECT_TRUE(plain.closed_by_server());

  Client kept(server->port());
  kept.send("GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_EQ(kept.read_response().header("connection"), "keep-alive");
  kept.send("GET /2 HTTP/1.0\r\n\r\n");
  const Response r = kept.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["path"], "/2");
}

TEST(HttpServer, ExpectContinueGetsAnInterimResponse) {
  auto server = start_server(echo);
  Client c(server->port());
  c.send("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 100);
  c.send("ok");
  const Response r = c.read_response();
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
  const auto t0 = Clock::now();
  expect_refused("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nhalf", 408, "200 ms", opts);
  EXPECT_GE(Clock::now() - t0, 190ms);
}

TEST(HttpServer, IdleKeepAliveConnectionIsClosedSilently) {
  ServerOptions opts;
  opts.idle_timeout_ms = 100;
  auto server = start_server(echo, opts);
  Client c(server->port());
  c.send(kGet);
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_TRUE(c.closed_by_server());  // no bytes: no 408 for an idle connection
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0; }));
}

TEST(HttpServer, ConnectionsOverTheLimitGet503) {
  ServerOptions opts;
  opts.max_connections = 1;
  auto server = start_server(echo, opts);
  Client held(server->port());
  held.send(kGet);
  ASSERT_EQ(held.read_response().status, 200);  // now counted as open

  Client extra(server->port());
  const Response r = extra.read_response();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "server_error");
  EXPECT_TRUE(extra.closed_by_server());

  held.send(kGet);  // the admitted connection is unaffected
  EXPECT_EQ(held.read_response().status, 200);
}

TEST(HttpServer, HandlerThatThrowsIs500AndTheServerGoesOn) {
  auto server = start_server([](const Request& req, ResponseWriter& w) {
    if (req.path == "/throw") throw std::runtime_error("model exploded");
    echo(req, w);
  });
  Client c(server->port());
  c.send("GET /throw HTTP/1.1\r\n\r\n");
  const Response r = c.read_response();
  ASSERT_EQ(r.status, 500);
  EXPECT_EQ(json::parse(r.body)["error"]["message"], "model exploded");
  c.send(kGet);
  EXPECT_EQ(c.read_response().status, 200);
  Client other(server->port());
  other.send(kGet);
  EXPECT_EQ(other.read_response().status, 200);
}

TEST(HttpServer, HandlerThatDoesNotAnswerIs500) {
  auto server = start_server([](const Request&, ResponseWriter&) {});
  Client c(server->port());
  c.send(kGet);
  const Response r = c.read_response();
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
  Client c(server->port());
  c.send("GET /stream HTTP/1.1\r\n\r\n");
  const Response r = c.read_response();
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
  Client c(server->port());
  c.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  const Response r = c.read_response();
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
  Client c(server->port());
  c.send(kGet);
  ASSERT_TRUE(eventually([&] { return entered.load(); }));
  // Bytes of a pipelined next request, waiting unread in the socket, are not a gone client.
  c.send(kGet);
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(returned.load());
  const auto closed_at = Clock::now();
  c.close();
  ASSERT_TRUE(eventually([&] { return returned.load(); }));
  EXPECT_TRUE(gone.load());
  EXPECT_LT(Clock::now() - closed_at, 1s);
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
    Client c(server->port());
    c.send(kGet);
    std::this_thread::sleep_for(20ms);
  }  // closed with unread bytes: the server's writes fail
  ASSERT_TRUE(eventually([&] { return done.load(); }));
  EXPECT_TRUE(failed.load());
}

TEST(HttpServer, StopWithAnIdleKeepAliveConnectionIsPrompt) {
  auto server = start_server(echo);
  Client c(server->port());
  c.send(kGet);
  ASSERT_EQ(c.read_response().status, 200);
  const auto t0 = Clock::now();
  server->stop();
  EXPECT_LT(Clock::now() - t0, 1s);
  EXPECT_EQ(server->open_connections(), 0);
  EXPECT_TRUE(c.closed_by_server());
  server->stop();  // idempotent
}

TEST(HttpServer, StopEndsAHandlerThatStreamsUntilItsWritesFail) {
  std::atomic<bool> streaming{false};
  auto server = start_server([&](const Request&, ResponseWriter& w) {
    w.begin_stream(200, "text/plain");
    streaming = true;
    while (w.write_chunk("tick")) std::this_thread::sleep_for(1ms);
  });
  Client c(server->port());
  c.send(kGet);
  ASSERT_TRUE(eventually([&] { return streaming.load(); }));
  const auto t0 = Clock::now();
  server->stop();
  EXPECT_LT(Clock::now() - t0, 1s);
}

TEST(HttpServer, ManySequentialConnectionsAllEnd) {
  auto server = start_server(echo);
  for (int i = 0; i < 200; ++i) {
    Client c(server->port());
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
  fasa::test::expect_error([&] { second.start(); }, ":" + std::to_string(first->port()));
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
  Client c(server->port());
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
  EXPECT_STREQ(fasa::http::status_text(505), "HTTP Version Not Supported");
  EXPECT_STREQ(fasa::http::status_text(299), "Unknown");
}
