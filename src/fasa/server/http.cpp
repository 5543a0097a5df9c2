#include "fasa/server/http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/server/http_connection.h"

namespace fasa::http {

namespace {

// A listening socket on host:port, IPv4 ("127.0.0.1", "0.0.0.0", "localhost") or IPv6 ("::1",
// "::": dual-stack where the system allows, so IPv4 clients reach it too; "[::1]" is taken as
// well). Non-blocking: accept never waits once poll said ready.
int listen_on(const std::string& host, int port) {
  const std::string where = fmt::format("{}:{}", host, port);
  if (port < 0 || port > 65535) fail("cannot listen on {}: the port must be 0..65535", where);
  std::string ip = host == "localhost" ? "127.0.0.1" : host;
  if (ip.size() > 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  sockaddr_storage ss{};
  socklen_t ss_len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    ss_len = sizeof *v4;
  } else if (inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    ss_len = sizeof *v6;
  } else {
    fail("cannot listen on {}: '{}' is not an IPv4 or IPv6 address", where, host);
  }
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) fail("cannot listen on {}: {}", where, std::strerror(errno));
  // A restarted server may bind while connections of the last one linger in TIME_WAIT.
  const int one = 1, zero = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ss.ss_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&ss), ss_len) < 0 ||
      ::listen(fd, SOMAXCONN) < 0) {
    const int err = errno;
    ::close(fd);
    fail("cannot listen on {}: {}", where, std::strerror(err));
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) < 0)
    fail("cannot read the bound port: {}", std::strerror(errno));
  return ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port)
                                  : ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
}

// The client's address ("1.2.3.4", "::1"; an IPv4 client of a dual-stack socket as "1.2.3.4")
// and port.
std::pair<std::string, int> peer_of(const sockaddr_storage& ss) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      inet_ntop(AF_INET, a->sin6_addr.s6_addr + 12, ip, sizeof ip);
    } else {
      inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
    }
    return {ip, ntohs(a->sin6_port)};
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
  inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
  return {ip, ntohs(a->sin_port)};
}

// How long a reserved connection is safe from being shed by a new connection that has sent
// nothing yet: ample for a connection thread to read a request that is already on its way.
constexpr std::chrono::milliseconds kShedGrace{100};

// True when the client of a freshly accepted socket has sent bytes already (a request on its
// way, as a health probe sends at once); never waits.
bool request_waiting(int fd) {
  char byte = 0;
  return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

std::string peer_name(const std::pair<std::string, int>& p) {
  return p.first.find(':') != std::string::npos ? fmt::format("[{}]:{}", p.first, p.second)
                                                : fmt::format("{}:{}", p.first, p.second);
}

}  // namespace

struct Server::Impl {
  ServerOptions opts;
  Handler handler;
  int listen_fd = -1;
  int wake_read = -1;  // the self-pipe: stop() writes a byte, every wait in every thread sees it
  int wake_write = -1;
  int drain_read = -1;  // the drain pipe: drain() writes a byte, idle waits and the acceptor see it
  int drain_write = -1;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<bool> draining{false};
  std::atomic<int> open{0};  // every connection thread, reserved ones included
  std::thread acceptor;
  std::mutex lifecycle;  // serializes start() and stop()

  std::mutex mu;  // guards the connection threads and counts below
  std::condition_variable all_ended;
  uint64_t next_id = 0;
  std::unordered_map<uint64_t, std::thread> running;
  // Every open connection's socket and state, oldest first (ids grow): the acceptor sheds idle
  // reserved ones. A socket is closed under `mu`, so a shed never reaches a reused descriptor.
  struct Live {
    int fd;
    bool reserved;
    std::chrono::steady_clock::time_point admitted;
    std::shared_ptr<std::atomic<detail::ConnState>> state;
  };
  std::map<uint64_t, Live> live;
  std::vector<std::thread> ended;  // threads whose connection is over, not yet joined
  int reserved_open = 0;
  std::unordered_map<std::string, int> per_client;  // open connections by address (> 0 only)

  // Who a connection belongs to: the counts it holds until its thread ends.
  struct Slot {
    std::string client;  // the IP address
    bool reserved;
  };

  detail::ConnectionContext context() {
    return {opts, handler, wake_read, stopping, drain_read, draining};
  }
  void accept_loop();
  void accept_one();
  void admit(int fd, std::string peer, Slot slot);
  bool shed_idle_reserved(bool asking);
  void connection_main(uint64_t id, int fd, const std::string& peer, Slot slot,
                       std::atomic<detail::ConnState>& state);
  void join_ended();
  void close_fds();
};

void Server::Impl::accept_loop() {
  while (!stopping.load()) {
    join_ended();
    pollfd fds[3] = {{listen_fd, POLLIN, 0}, {wake_read, POLLIN, 0}, {drain_read, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if (fds[2].revents != 0) {  // draining: connections from now on are refused by the system
      ::close(listen_fd);
      listen_fd = -1;
      return;
    }
    if (fds[0].revents != 0) accept_one();
  }
}

void Server::Impl::accept_one() {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  const int fd =
      ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    // Out of descriptors or memory: the pending connection stays queued and poll reports it
    // again at once, so pause (still waking for stop) instead of spinning.
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      pollfd wake{wake_read, POLLIN, 0};
      ::poll(&wake, 1, 100);
    }
    return;
  }
  // Stream chunks (one token each) must leave at once, not wait for Nagle's algorithm.
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // One client (IP address) may hold max_connections_per_client; all together max_connections,
  // then reserved_connections more that serve reserved_paths only.
  const std::pair<std::string, int> peer = peer_of(sa);
  const Slot slot{peer.first, false};
  int status = 0;
  std::string message;
  {
    std::lock_guard lock(mu);
    const auto it = per_client.find(slot.client);
    const int from_client = it == per_client.end() ? 0 : it->second;
    const int cap = opts.max_connections_per_client;
    if (cap > 0 && from_client >= cap) {
      status = 429;
      message = fmt::format(
          "too many connections from {} (the limit per client is {}); close idle ones or retry "
          "later",
          peer.first, cap);
    } else if (open.load() - reserved_open < opts.max_connections) {
      admit(fd, peer_name(peer), slot);
    } else if (!opts.reserved_paths.empty() && opts.reserved_connections > 0 &&
               (reserved_open < opts.reserved_connections ||
                shed_idle_reserved(request_waiting(fd)))) {
      admit(fd, peer_name(peer), {slot.client, true});
    } else {
      status = 503;
      message =
          fmt::format("too many connections (the limit is {}); retry later", opts.max_connections);
    }
  }
  if (status != 0) detail::refuse_connection(fd, status, message);
}

// Called with `mu` held, the reserve full: ends the oldest reserved connection that has read
// none of a request yet, so that idle connections (from however many addresses) cannot keep
// the reserve from a client that asks at once. `asking`: the new connection's request is
// waiting already (a probe); then any idle one may go. Otherwise (it may be one more idle
// connection) only one idle for kShedGrace may, so that connections arriving in a flood cannot
// end a probe's before its thread has read the request. A shed connection stays counted until
// its thread ends, so the reserve may briefly hold more. False when none may go.
bool Server::Impl::shed_idle_reserved(bool asking) {
  const auto now = std::chrono::steady_clock::now();
  for (auto& [id, c] : live) {
    if (!c.reserved) continue;
    if (!asking && now - c.admitted < kShedGrace) break;  // (oldest first: the rest are younger)
    auto idle = detail::ConnState::Idle;
    if (c.state->compare_exchange_strong(idle, detail::ConnState::Shed)) {
      ::shutdown(c.fd, SHUT_RDWR);  // its waits wake, its reads end
      return true;
    }
  }
  return false;
}

// Called with `mu` held.
void Server::Impl::admit(int fd, std::string peer, Slot slot) {
  const uint64_t id = next_id++;
  auto state = std::make_shared<std::atomic<detail::ConnState>>(detail::ConnState::Idle);
  try {
    // Created under the lock, so the thread finds itself in `running` when it ends.
    running.emplace(id, std::thread([this, id, fd, slot, state, peer = std::move(peer)] {
                      connection_main(id, fd, peer, slot, *state);
                    }));
  } catch (const std::system_error&) {
    detail::refuse_connection(fd, 503, "the server cannot start another connection thread");
    return;
  }
  live.emplace(id, Live{fd, slot.reserved, std::chrono::steady_clock::now(), state});
  ++open;
  ++per_client[slot.client];
  if (slot.reserved) ++reserved_open;
}

void Server::Impl::connection_main(uint64_t id, int fd, const std::string& peer, Slot slot,
                                   std::atomic<detail::ConnState>& state) {
  try {
    detail::serve_connection(fd, peer, slot.reserved, context(), state);
  } catch (const std::exception&) {
    // Out of memory mid-request: this connection is dropped (its socket closed), the server
    // goes on, and the bookkeeping below still runs so stop() never waits for it.
  }
  std::lock_guard lock(mu);
  ::close(fd);
  live.erase(id);
  --open;
  if (--per_client[slot.client] == 0) per_client.erase(slot.client);
  if (slot.reserved) --reserved_open;
  auto node = running.extract(id);
  ended.push_back(std::move(node.mapped()));  // joined by the acceptor or stop()
  if (running.empty()) all_ended.notify_all();
}

void Server::Impl::join_ended() {
  std::vector<std::thread> done;
  {
    std::lock_guard lock(mu);
    done.swap(ended);
  }
  for (std::thread& t : done) t.join();
}

void Server::Impl::close_fds() {
  for (int* fd : {&listen_fd, &wake_read, &wake_write, &drain_read, &drain_write}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

Server::Server(ServerOptions opts, Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(opts);
  impl_->handler = std::move(handler);
}

Server::~Server() { stop(); }

void Server::start() {
  Impl& s = *impl_;
  std::lock_guard lock(s.lifecycle);
  FASA_CHECK(s.listen_fd < 0 && !s.stopping.load());  // start() once, before stop()
  s.listen_fd = listen_on(s.opts.host, s.opts.port);
  s.port = bound_port(s.listen_fd);
  for (auto [read_end, write_end] :
       {std::pair{&s.wake_read, &s.wake_write}, std::pair{&s.drain_read, &s.drain_write}}) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) < 0) {
      const int err = errno;
      s.close_fds();
      fail("cannot create the server's wake pipes: {}", std::strerror(err));
    }
    *read_end = pipe_fds[0];
    *write_end = pipe_fds[1];
  }
  s.acceptor = std::thread([&s] { s.accept_loop(); });
}

int Server::port() const { return impl_->port; }

int Server::open_connections() const { return impl_->open.load(); }

void Server::stop() {
  Impl& s = *impl_;
  std::lock_guard lock(s.lifecycle);
  s.stopping = true;
  if (s.acceptor.joinable()) {
    const char byte = 1;
    while (::write(s.wake_write, &byte, 1) < 0 && errno == EINTR) {
    }
    s.acceptor.join();
    {
      std::unique_lock threads_lock(s.mu);
      s.all_ended.wait(threads_lock, [&s] { return s.running.empty(); });
    }
    s.join_ended();
  }
  s.close_fds();
}

void Server::drain() {
  Impl& s = *impl_;
  std::lock_guard lock(s.lifecycle);
  if (s.stopping.load() || s.draining.exchange(true) || s.drain_write < 0) return;
  const char byte = 1;
  while (::write(s.drain_write, &byte, 1) < 0 && errno == EINTR) {
  }
}

std::string error_json(int status, std::string_view message, std::string_view type) {
  const nlohmann::json body = {{"error", {{"message", message}, {"type", type}, {"code", status}}}};
  // Replace invalid UTF-8 (a message may quote client bytes) instead of throwing.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const char* status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";  // nginx's: the client left before the answer
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

}  // namespace fasa::http
