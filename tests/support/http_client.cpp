#include "support/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace fasa::test {

namespace {

using Clock = std::chrono::steady_clock;

void parse_headers(const std::string& head, HttpResponse& r) {
  size_t pos = head.find("\r\n") + 2;
  for (size_t end; (end = head.find("\r\n", pos)) != pos; pos = end + 2) {
    const std::string line = head.substr(pos, end - pos);
    const size_t colon = line.find(':');
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const size_t value = line.find_first_not_of(' ', colon + 1);
    r.headers[name] = value == std::string::npos ? "" : line.substr(value);
  }
}

}  // namespace

std::string HttpResponse::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

HttpClient::HttpClient(int port, std::chrono::milliseconds timeout, const std::string& source)
    : timeout_(timeout) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (!source.empty()) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    if (inet_pton(AF_INET, source.c_str(), &local.sin_addr) != 1 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
      ADD_FAILURE() << "bind to " << source << ": " << std::strerror(errno);
    }
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    ADD_FAILURE() << "connect to port " << port << ": " << std::strerror(errno);
}

HttpClient::~HttpClient() { close(); }

void HttpClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void HttpClient::send(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      ADD_FAILURE() << "send: " << std::strerror(errno);
      return;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

HttpResponse HttpClient::read_response() {
  const auto deadline = Clock::now() + timeout_;
  HttpResponse r;
  size_t head_end;
  while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
    if (fill(deadline) <= 0) return r;
  }
  const std::string head = take(head_end + 4);
  parse_headers(head, r);
  const int status = std::stoi(head.substr(9, 3));  // "HTTP/1.1 200 OK"
  if (status >= 200 && !read_body(r, deadline)) return r;
  r.status = status;
  return r;
}

bool HttpClient::closed_by_server() {
  const auto deadline = Clock::now() + timeout_;
  for (;;) {
    const int n = fill(deadline);
    if (n == 0) return buf_.empty();
    if (n < 0) return false;
  }
}

std::string HttpClient::read_until_close() {
  const auto deadline = Clock::now() + timeout_;
  while (fill(deadline) > 0) {
  }
  return take(buf_.size());
}

// Appends what arrives: > 0 bytes read, 0 at EOF, -1 on timeout or error.
int HttpClient::fill(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  pollfd pfd{fd_, POLLIN, 0};
  if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return -1;
  char tmp[1 << 16];
  const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
  if (n < 0) return -1;
  buf_.append(tmp, static_cast<size_t>(n));
  return static_cast<int>(n);
}

bool HttpClient::need(size_t n, Clock::time_point deadline) {
  while (buf_.size() < n) {
    if (fill(deadline) <= 0) return false;
  }
  return true;
}

std::string HttpClient::take(size_t n) {
  std::string out = buf_.substr(0, n);
  buf_.erase(0, n);
  return out;
}

bool HttpClient::read_body(HttpResponse& r, Clock::time_point deadline) {
  if (r.header("transfer-encoding") == "chunked") return read_chunks(r, deadline);
  if (!r.header("content-length").empty()) {
    const size_t n = std::stoul(r.header("content-length"));
    if (!need(n, deadline)) return false;
    r.body = take(n);
    return true;
  }
  while (fill(deadline) > 0) {  // no length: the body ends with the connection
  }
  r.body = take(buf_.size());
  return true;
}

bool HttpClient::read_chunks(HttpResponse& r, Clock::time_point deadline) {
  for (;;) {
    size_t eol;
    while ((eol = buf_.find("\r\n")) == std::string::npos) {
      if (fill(deadline) <= 0) return false;
    }
    const size_t size = std::stoul(take(eol + 2), nullptr, 16);
    if (!need(size + 2, deadline)) return false;
    r.body += take(size);
    if (take(2) != "\r\n") return false;
    if (size == 0) return true;  // the last chunk (this server sends no trailers)
  }
}

}  // namespace fasa::test
