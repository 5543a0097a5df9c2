#include "fasa/server/cors.h"

#include <cctype>

#include "fasa/core/error.h"
#include "fasa/server/http_response.h"

namespace fasa::server {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// "scheme://host[:port]": a scheme of letters, digits, '+', '-', '.' (a letter first), then a
// host and port of visible bytes without '/', '?', '#' or '@'.
bool is_origin(std::string_view s) {
  const size_t sep = s.find("://");
  if (sep == std::string_view::npos || sep == 0 || !std::isalpha(static_cast<unsigned char>(s[0])))
    return false;
  for (char c : s.substr(0, sep)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return false;
    }
  }
  const std::string_view rest = s.substr(sep + 3);
  if (rest.empty()) return false;
  for (char c : rest) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '/' || c == '?' || c == '#' || c == '@') return false;
  }
  return true;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

void check_cors_origins(const std::vector<std::string>& origins) {
  for (const std::string& o : origins) {
    if (o == "*") {
      if (origins.size() > 1) fail("--cors-origin '*' allows every origin: give it alone");
      continue;
    }
    if (!is_origin(o)) {
      fail(
          "--cors-origin '{}' is not an origin: give scheme://host[:port] (as "
          "http://localhost:3000, with no path, not even a trailing '/'), or '*' for any",
          o);
    }
  }
}

std::optional<std::string> allowed_origin(const std::vector<std::string>& origins,
                                          const std::string* origin) {
  if (origin == nullptr || origins.empty()) return std::nullopt;
  if (origins.size() == 1 && origins[0] == "*") return std::string("*");
  for (const std::string& o : origins) {
    if (iequals(o, *origin)) return *origin;
  }
  return std::nullopt;
}

http::Headers cors_answer_headers(const std::string& allow) {
  return {{"Access-Control-Allow-Origin", allow},
          {"Vary", "Origin"},
          {"Access-Control-Expose-Headers",
           "X-Fasa-Ignored-Fields, X-Fasa-Policy, X-Fasa-Calibration, X-Fasa-Kv-Bytes-Read, "
           "X-Fasa-Kv-Bytes-Read-Per-Token, X-Fasa-Lossless, Retry-After"}};
}

http::Headers cors_preflight_headers(std::string_view method, const std::string* requested) {
  std::vector<std::string> names = {"Authorization", "Content-Type"};
  std::string_view rest = requested ? std::string_view(*requested) : std::string_view();
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view name = trimmed(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (!http::detail::is_token(name)) continue;
    bool known = false;
    for (const std::string& n : names) known = known || iequals(n, name);
    if (!known) names.emplace_back(name);
  }
  std::string allow_headers;
  for (const std::string& n : names) allow_headers += (allow_headers.empty() ? "" : ", ") + n;
  return {{"Access-Control-Allow-Methods", std::string(method) + ", OPTIONS"},
          {"Access-Control-Allow-Headers", allow_headers},
          {"Access-Control-Max-Age", std::to_string(kCorsMaxAgeSeconds)}};
}

http::Headers HeaderAdder::with_extra(const http::Headers& headers) const {
  http::Headers all = headers;
  all.insert(all.end(), extra_.begin(), extra_.end());
  return all;
}

void HeaderAdder::send(int status, std::string_view type, std::string_view body,
                       const http::Headers& headers) {
  w_.send(status, type, body, with_extra(headers));
}

bool HeaderAdder::begin_stream(int status, std::string_view type, const http::Headers& headers) {
  return w_.begin_stream(status, type, with_extra(headers));
}

}  // namespace fasa::server
