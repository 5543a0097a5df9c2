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

// Serves requests on the connected, non-blocking socket `fd` until the client leaves, a
// protocol error, a timeout or the server stops; closes `fd`. `peer` is "ip:port". A `reserved`
// connection serves one request, within reserved_timeout_ms, and only to a reserved path.
void serve_connection(int fd, const std::string& peer, bool reserved, const ConnectionContext& ctx);

// Answers `status` with an error_json body and `Retry-After: 1` on a freshly accepted socket
// without waiting for anything (the accept thread calls it), then closes `fd`.
void refuse_connection(int fd, int status, std::string_view message);

}  // namespace fasa::http::detail
