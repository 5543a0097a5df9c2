// A raw HTTP/1.1 test client on a TCP socket to 127.0.0.1: the test chooses every byte it sends
// and reads responses as their framing says (Content-Length, chunked, or until the close).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>

namespace fasa::test {

struct HttpResponse {
  int status = 0;                              // 0: no complete response arrived in time
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // de-chunked
  std::string header(const std::string& name) const;
};

class HttpClient {
 public:
  // Connects at once (a failed connect is a test failure). `timeout`: the longest a read waits.
  // `source`: the local address to connect from ("" = the kernel's choice, 127.0.0.1); any
  // 127.x.y.z works on Linux, so one test can be several clients of a per-client limit.
  explicit HttpClient(int port, std::chrono::milliseconds timeout = std::chrono::milliseconds(1500),
                      const std::string& source = "");
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  void send(std::string_view data);
  // The next response (an interim 1xx one too); status 0 if none arrived complete in time.
  HttpResponse read_response();
  // True when the server closes the connection within the timeout with no further bytes.
  bool closed_by_server();
  // Every byte the server sends until it closes the connection (what read_response() did not
  // take yet included), unparsed; what came before the timeout if it does not close.
  std::string read_until_close();
  void close();

 private:
  int fill(std::chrono::steady_clock::time_point deadline);
  bool need(size_t n, std::chrono::steady_clock::time_point deadline);
  std::string take(size_t n);
  bool read_body(HttpResponse& r, std::chrono::steady_clock::time_point deadline);
  bool read_chunks(HttpResponse& r, std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::chrono::milliseconds timeout_;
  std::string buf_;  // received, not yet parsed
};

}  // namespace fasa::test
