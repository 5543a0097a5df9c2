#include "fasa/server/http_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <stdexcept>

#include <fmt/format.h>

#include "fasa/server/http_parse.h"
#include "fasa/server/http_response.h"

namespace fasa::http::detail {

namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

// A write that makes no progress this long means the client stopped reading: it counts as gone.
constexpr std::chrono::seconds kWriteStall{30};
// How long a connection we close drains what the client still sends (see drain_before_close).
constexpr Millis kLinger{1000};
constexpr size_t kReadBytes = 16 << 10;

bool would_block(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

int poll_timeout_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<Millis>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX));
}

enum class Wait { Ready, Timeout, Stopped, Drained };

// Waits until `fd` has one of `events` (or an error), the deadline passes, the server stops, or
// (with a drain_fd, >= 0) the server drains.
Wait wait_for(int fd, short events, Clock::time_point deadline, int wake_fd, int drain_fd = -1) {
  for (;;) {
    pollfd fds[3] = {{fd, events, 0}, {wake_fd, POLLIN, 0}, {drain_fd, POLLIN, 0}};
    const int rc = ::poll(fds, 3, poll_timeout_ms(deadline));  // (poll skips a negative fd)
    if (rc < 0 && errno == EINTR) continue;
    if (fds[1].revents != 0) return Wait::Stopped;
    if (fds[2].revents != 0) return Wait::Drained;
    if (rc != 0) return Wait::Ready;  // a failed poll too: the next recv or send reports it
    if (Clock::now() >= deadline) return Wait::Timeout;
  }
}

const Headers kRetrySoon = {{"Retry-After", "1"}};

// Thrown when a connection ends without an answer: the client left or the server stops.
struct Disconnected {};

class Connection {
 public:
  Connection(int fd, std::string peer, bool reserved, const ConnectionContext& ctx,
             std::atomic<ConnState>& state)
      : fd_(fd),
        peer_(std::move(peer)),
        reserved_(reserved),
        request_ms_(reserved ? ctx.opts.reserved_timeout_ms : ctx.opts.request_timeout_ms),
        ctx_(ctx),
        state_(state) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void serve();
  bool send_all(std::string_view data);
  bool peer_gone() const;

 private:
  bool await_request(Clock::time_point deadline);
  bool serve_one(Clock::time_point deadline);
  RequestHead read_request(Clock::time_point deadline);
  size_t read_head(Clock::time_point deadline);
  void read_or_timeout(Clock::time_point deadline);
  // `idle`: no byte of a request read yet, so a draining server closes the connection instead.
  bool read_more(Clock::time_point deadline, bool idle = false);
  bool respond(const RequestHead& head);
  bool reserved_path(const std::string& path) const;
  void drain_before_close();

  int fd_;
  std::string peer_;
  const bool reserved_;
  const int request_ms_;  // the time a request may take to arrive
  const ConnectionContext& ctx_;
  std::atomic<ConnState>& state_;
  std::string buf_;  // received, not yet consumed bytes (the start of a pipelined next request)
};

// The handler's side of one response.
class Writer final : public ResponseWriter {
 public:
  // `draining`: once set, the answer (started after it) ends the connection.
  Writer(Connection& conn, bool keep_alive, bool chunked, const std::atomic<bool>& draining)
      : conn_(conn), keep_alive_(keep_alive), chunked_(chunked), draining_(draining) {}

  // A header with a control byte throws BadHeader before anything is written, so the handler's
  // caller can still answer 500.
  void send(int status, std::string_view content_type, std::string_view body,
            const Headers& headers) override {
    check_headers(content_type, headers);
    start(State::Sent);
    ok_ = conn_.send_all(whole_response(status, content_type, body, headers, keep_alive_));
  }

  bool begin_stream(int status, std::string_view content_type, const Headers& headers) override {
    check_headers(content_type, headers);  // BadHeader before anything is written
    start(State::Streaming);
    // An HTTP/1.0 client knows no chunked encoding: its stream ends when the connection closes.
    if (!chunked_) keep_alive_ = false;
    std::string head = response_head(status, content_type, headers, keep_alive_);
    head += chunked_ ? "Transfer-Encoding: chunked\r\n\r\n" : "\r\n";
    ok_ = !conn_.peer_gone() && conn_.send_all(head);
    return ok_;
  }

  bool write_chunk(std::string_view data) override {
    if (state_ != State::Streaming) throw std::logic_error("write_chunk outside a stream");
    if (!ok_) return false;
    if (data.empty()) return true;  // an empty chunk would end the stream
    ok_ = chunked_ ? conn_.send_all(fmt::format("{:x}\r\n{}\r\n", data.size(), data))
                   : conn_.send_all(data);
    return ok_;
  }

  void end_stream() override {
    if (state_ != State::Streaming) throw std::logic_error("end_stream outside a stream");
    state_ = State::Ended;
    if (ok_ && chunked_) ok_ = conn_.send_all("0\r\n\r\n");
  }

  bool client_gone() override { return !ok_ || conn_.peer_gone(); }

  // After the handler returned (`error` says why it may not have answered): answers 500 if it
  // never answered. True when the connection may serve another request; a stream the handler
  // left unfinished is cut by closing, so the client sees it is incomplete.
  bool finish(std::string_view error) {
    if (state_ == State::None) {
      start(State::Sent);
      ok_ = conn_.send_all(error_response(500, error, keep_alive_));
    }
    return ok_ && keep_alive_ && state_ != State::Streaming;
  }

 private:
  enum class State { None, Sent, Streaming, Ended };

  void start(State next) {
    if (state_ != State::None) throw std::logic_error("the response was already started");
    state_ = next;
    if (draining_.load()) keep_alive_ = false;
  }

  Connection& conn_;
  bool keep_alive_;
  const bool chunked_;
  const std::atomic<bool>& draining_;
  State state_ = State::None;
  bool ok_ = true;  // false once a write failed: the client is gone
};

// The first request must arrive whole within request_ms_ of the accept, so a connection that
// sends nothing (or dribbles) holds its slot no longer than that. Later ones may start up to
// idle_timeout_ms after the last answer, then have request_ms_ to arrive whole.
void Connection::serve() {
  try {
    auto deadline = Clock::now() + Millis(request_ms_);
    for (bool first = true;; first = false) {
      if (!first) {
        if (!await_request(Clock::now() + Millis(ctx_.opts.idle_timeout_ms))) return;
        deadline = Clock::now() + Millis(request_ms_);
      } else if (!await_request(deadline)) {
        return;
      }
      if (!serve_one(deadline)) {
        drain_before_close();
        return;
      }
    }
  } catch (const Disconnected&) {
    // Nothing to answer: the client left or the server stops.
  }
}

// Waits for the first byte of the next request, skipping empty lines between requests. False
// when none came before the deadline or the server drains (the connection is then closed
// without an answer). Idle while it waits: the acceptor may shed it then (Disconnected).
bool Connection::await_request(Clock::time_point deadline) {
  ConnState busy = ConnState::Busy;
  state_.compare_exchange_strong(busy, ConnState::Idle);
  for (;;) {
    buf_.erase(0, leading_newlines(buf_));
    if (!buf_.empty()) break;
    if (!read_more(deadline, /*idle=*/true)) return false;
  }
  ConnState idle = ConnState::Idle;
  if (!state_.compare_exchange_strong(idle, ConnState::Busy)) throw Disconnected{};  // shed
  return true;
}

// Reads one request and answers it; false when the connection must close afterwards.
bool Connection::serve_one(Clock::time_point deadline) {
  RequestHead head;
  try {
    head = read_request(deadline);
  } catch (const ProtocolError& e) {
    send_all(error_response(e.status, e.what(), false));
    return false;
  }
  return respond(head);
}

RequestHead Connection::read_request(Clock::time_point deadline) {
  const size_t head_end = read_head(deadline);
  RequestHead head =
      parse_head(std::string_view(buf_).substr(0, head_end), ctx_.opts.max_body_bytes);
  const size_t total = head_end + head.content_length;
  if (head.expect_continue && buf_.size() < total && !send_all("HTTP/1.1 100 Continue\r\n\r\n")) {
    throw Disconnected{};
  }
  while (buf_.size() < total) read_or_timeout(deadline);
  head.request.body = buf_.substr(head_end, head.content_length);
  head.request.peer = peer_;
  buf_.erase(0, total);
  return head;
}

// Reads until the buffer holds a whole head; returns where it ends.
size_t Connection::read_head(Clock::time_point deadline) {
  const size_t max_bytes = ctx_.opts.max_header_bytes;
  size_t scanned = 0;
  for (;;) {
    const size_t end = find_head_end(buf_, scanned);
    if (end != std::string_view::npos && end <= max_bytes) return end;
    if (end != std::string_view::npos || buf_.size() > max_bytes) {
      throw ProtocolError(431,
                          fmt::format("the request line and headers exceed {} bytes", max_bytes));
    }
    scanned = buf_.size();
    read_or_timeout(deadline);
  }
}

void Connection::read_or_timeout(Clock::time_point deadline) {
  if (!read_more(deadline)) {
    throw ProtocolError(408, fmt::format("the request did not arrive within {} ms", request_ms_));
  }
}

// Appends what the socket has to the buffer; false when nothing came before the deadline.
bool Connection::read_more(Clock::time_point deadline, bool idle) {
  for (;;) {
    const Wait wait = wait_for(fd_, POLLIN, deadline, ctx_.wake_fd, idle ? ctx_.drain_fd : -1);
    if (wait == Wait::Timeout || wait == Wait::Drained) return false;
    if (wait == Wait::Stopped) throw Disconnected{};
    const size_t old_size = buf_.size();
    buf_.resize(old_size + kReadBytes);
    const ssize_t n = ::recv(fd_, buf_.data() + old_size, kReadBytes, 0);
    buf_.resize(old_size + std::max<ssize_t>(n, 0));
    if (n > 0) return true;
    if (n == 0 || !would_block(errno)) throw Disconnected{};
  }
}

bool Connection::reserved_path(const std::string& path) const {
  const auto& paths = ctx_.opts.reserved_paths;
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

bool Connection::respond(const RequestHead& head) {
  if (reserved_ && !reserved_path(head.request.path)) {
    std::string paths;
    for (const std::string& p : ctx_.opts.reserved_paths) paths += (paths.empty() ? "" : ", ") + p;
    send_all(error_response(503,
                            fmt::format("too many connections (the limit is {}); only {} {} "
                                        "answered now; retry later",
                                        ctx_.opts.max_connections, paths,
                                        ctx_.opts.reserved_paths.size() == 1 ? "is" : "are"),
                            false, kRetrySoon));
    return false;
  }
  const bool keep_alive =
      head.keep_alive && !reserved_ && !ctx_.stopping.load() && !ctx_.draining.load();
  Writer writer(*this, keep_alive, head.minor_version == 1, ctx_.draining);
  try {
    ctx_.handler(head.request, writer);
  } catch (const std::exception& e) {
    return writer.finish(e.what());
  } catch (...) {
    return writer.finish("the handler failed with an unknown exception");
  }
  return writer.finish("the handler did not answer the request");
}

bool Connection::send_all(std::string_view data) {
  while (!data.empty()) {
    // Checked before every write: a handler that streams to a fast client must still stop.
    if (ctx_.stopping.load()) return false;
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && !would_block(errno)) return false;
    if (wait_for(fd_, POLLOUT, Clock::now() + kWriteStall, ctx_.wake_fd) != Wait::Ready)
      return false;
  }
  return true;
}

// Non-blocking. Bytes waiting to be read (a pipelined next request) do not mean gone; EOF,
// a half-close (POLLRDHUP) or an error does. So does a stopping server: handlers should end.
bool Connection::peer_gone() const {
  if (ctx_.stopping.load()) return true;
  pollfd pfd{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&pfd, 1, 0) <= 0) return false;
  if (pfd.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) return true;
  char byte = 0;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && !would_block(errno));
}

// Closing a socket that still holds unread request bytes makes the kernel send a reset, which
// can destroy the response still on its way to the client. So half-close first, then read and
// discard what the client still sends until it closes too (bounded by kLinger).
void Connection::drain_before_close() {
  ::shutdown(fd_, SHUT_WR);
  const auto deadline = Clock::now() + kLinger;
  char scratch[4096];
  while (wait_for(fd_, POLLIN, deadline, ctx_.wake_fd) == Wait::Ready) {
    const ssize_t n = ::recv(fd_, scratch, sizeof scratch, 0);
    if (n == 0 || (n < 0 && !would_block(errno))) return;
  }
}

}  // namespace

void serve_connection(int fd, const std::string& peer, bool reserved, const ConnectionContext& ctx,
                      std::atomic<ConnState>& state) {
  Connection conn(fd, peer, reserved, ctx, state);
  conn.serve();
}

void refuse_connection(int fd, int status, std::string_view message) {
  const std::string response = error_response(status, message, false, kRetrySoon);
  // One non-blocking try: a fresh socket's send buffer takes a small response whole.
  ::send(fd, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
  // Discard what the client sent already, so the close is not a reset (see drain_before_close).
  char scratch[4096];
  while (::recv(fd, scratch, sizeof scratch, MSG_DONTWAIT) > 0) {
  }
  ::close(fd);
}

}  // namespace fasa::http::detail
