// Internal to the HTTP server: one client connection, served on its own thread.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "fasa/server/http.h"

namespace fasa::http::detail {

// What every connection shares with its server.
struct ConnectionContext {
  const ServerOptions& opts;
  const Handler& handler;
  int wake_fd;  // becomes readable when the server stops; every wait polls it
  const std::atomic<bool>& stopping;
  int drain_fd;  // becomes readable when the server drains; the wait for a next request polls it
  const std::atomic<bool>& draining;
};

// Where a connection is, as the acceptor sees it: waiting for a request with none of it read
// (Idle), reading or answering one (Busy), or told by the acceptor to end (Shed: it ends without
// an answer instead of reading a request). Only Idle becomes Shed, by compare-and-swap.
enum class ConnState { Idle, Busy, Shed };

// Serves requests on the connected, non-blocking socket `fd` until the client leaves, a
// protocol error, a timeout, the server stops or the acceptor sheds it (`state`); the caller
// closes `fd` afterwards. `peer` is "ip:port". A `reserved` connection serves one request,
// within reserved_timeout_ms, and only to a reserved path.
void serve_connection(int fd, const std::string& peer, bool reserved, const ConnectionContext& ctx,
                      std::atomic<ConnState>& state);

// Answers `status` with an error_json body and `Retry-After: 1` on a freshly accepted socket
// without waiting for anything (the accept thread calls it), then closes `fd`.
void refuse_connection(int fd, int status, std::string_view message);

}  // namespace fasa::http::detail
