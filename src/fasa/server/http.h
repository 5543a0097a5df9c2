// A small HTTP/1.1 server on POSIX sockets: one thread per connection (bounded), keep-alive,
// Content-Length request bodies, whole or chunked (streamed) responses. It knows nothing about
// the API it serves: every request goes to one Handler. Limits protect it from any client:
// header and body sizes, the time a request may take to arrive, the time a connection may sit
// idle, the number of connections in all and from one client (IP address). A few reserved
// connections beyond the limit serve only cheap paths (e.g. /health), so those stay answered
// however many connections others hold.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fasa::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // target without the query, e.g. "/v1/completions"
  std::string query;   // after '?', "" if none (not decoded)
  Headers headers;     // names lower-cased, values trimmed, in arrival order
  std::string body;    // exactly Content-Length bytes
  std::string peer;    // "ip:port" of the client
  // The first header of that (case-insensitive) name, or null.
  const std::string* header(std::string_view name) const;
};

// How a handler answers. Either send() once, or begin_stream() then write_chunk()... and
// end_stream(). If the handler returns without answering, the server answers 500.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // A whole response with Content-Length. `headers` are extra headers (e.g. WWW-Authenticate).
  virtual void send(int status, std::string_view content_type, std::string_view body,
                    const Headers& headers = {}) = 0;
  // A streamed response (Transfer-Encoding: chunked), e.g. text/event-stream for SSE. Returns
  // false when the client is already gone.
  virtual bool begin_stream(int status, std::string_view content_type,
                            const Headers& headers = {}) = 0;
  // Sends `data` as one chunk and flushes it. Returns false once the client is gone (the write
  // failed); later writes return false at once.
  virtual bool write_chunk(std::string_view data) = 0;
  virtual void end_stream() = 0;
  // Non-blocking: true when the client has closed the connection or it broke (a peer that
  // closed its sending side while we compute counts as gone). For handlers that compute for a
  // long time before they answer (a non-streamed completion) so they can cancel the work.
  virtual bool client_gone() = 0;
};

using Handler = std::function<void(const Request&, ResponseWriter&)>;

struct ServerOptions {
  std::string host = "127.0.0.1";       // an IPv4 or IPv6 address ("localhost", "::1", "::")
  int port = 8080;                      // 0: any free port (see Server::port())
  size_t max_header_bytes = 16 << 10;   // request line + headers; more: 431
  size_t max_body_bytes = 1 << 20;      // Content-Length above it: 413 (body not read)
  int max_connections = 64;             // open at once, every client together; more: reserved
  int max_connections_per_client = 32;  // open at once from one IP address (0: no limit); more
                                        // are answered 429 and closed, reserved ones included
  int reserved_connections = 8;         // beyond max_connections: one request each, and only to
                                        // reserved_paths (others: 503); beyond those: 503, closed
  std::vector<std::string> reserved_paths;  // e.g. "/health": answered on reserved connections
  // A request (headers + body) must arrive whole within it (408). A new connection's first
  // request counts from the accept: a connection that sends nothing is closed after it.
  int request_timeout_ms = 10000;
  int idle_timeout_ms = 30000;     // keep-alive connection with no new request: closed
  int reserved_timeout_ms = 2000;  // request_timeout_ms of a reserved connection
};

// Errors the server answers itself, before any handler, each with a JSON body
//   {"error": {"message": "...", "type": "invalid_request_error" | "server_error", "code": STATUS}}
// 400 malformed request line, header or Content-Length; 411 a body without Content-Length
// (chunked request bodies are not supported); 413 body too large; 431 headers too large;
// 408 request too slow; 505 not HTTP/1.x; 429 too many connections from this client; 503 too
// many connections (with Retry-After: 1, both); 500 a handler that threw or did not answer (the
// message says which; the server keeps running).
class Server {
 public:
  Server(ServerOptions opts, Handler handler);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens, then accepts on a background thread. Throws fasa::Error naming the
  // address when it cannot bind (in use, bad host, no permission).
  void start();
  int port() const;  // the bound port (useful with port 0)
  // Stops accepting, closes connections (interrupting reads and idle keep-alives; a handler
  // still running finishes: its writes fail fast) and joins every thread. Idempotent.
  void stop();
  // The first half of a graceful stop: closes the listening socket (new connections are refused
  // by the system), closes every connection that is waiting for its next request with none of
  // it read, and ends every connection after the answer it is giving or reading a request for
  // (`Connection: close`). Those answers go on as usual, so open_connections() falls to 0 as
  // they end; stop() then ends whatever is left. Idempotent; after stop(), nothing to do.
  void drain();
  int open_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The JSON error body above, for handlers that want the same shape.
std::string error_json(int status, std::string_view message,
                       std::string_view type = "invalid_request_error");
// "OK", "Bad Request", ... ("Unknown" for others).
const char* status_text(int status);

}  // namespace fasa::http
