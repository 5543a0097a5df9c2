#include "fasa/server/http_parse.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace fasa::http::detail {

namespace {

bool is_tchar(char c) {  // RFC 9110 section 5.6.2: the characters of a token
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_tchar(c)) return false;
  }
  return true;
}

bool is_ctl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

std::string_view trim_ows(std::string_view s) {  // optional whitespace: SP and HTAB
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The head's lines without their terminators (CRLF or bare LF); the final empty line is dropped.
std::vector<std::string_view> split_lines(std::string_view head) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    const size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    lines.push_back(line);
  }
  return lines;
}

// "METHOD SP target SP HTTP/1.x" into the request; returns the minor version.
int parse_request_line(std::string_view line, Request& req) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    throw ProtocolError(400, "malformed request line (want 'METHOD target HTTP/1.1')");
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) throw ProtocolError(400, "malformed request method");
  if (target.empty()) throw ProtocolError(400, "empty request target");
  for (char c : target) {
    if (is_ctl(c)) throw ProtocolError(400, "control character in request target");
  }
  const bool versioned = version.size() == 8 && version.substr(0, 5) == "HTTP/" &&
                         version[5] >= '0' && version[5] <= '9' && version[6] == '.' &&
                         version[7] >= '0' && version[7] <= '9';
  if (!versioned) throw ProtocolError(400, "malformed HTTP version in request line");
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1'))
    throw ProtocolError(505,
                        fmt::format("{} is not supported (HTTP/1.0 and HTTP/1.1 are)", version));
  // The target's forms (RFC 9112 §3.2): origin-form "/path?query", absolute-form
  // "http://host/path?query" (reduced to its path and query), and "*" (OPTIONS). Anything else
  // ("?", "x", "v1/models") is refused rather than routed with an empty or relative path.
  std::string_view t = target;
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (t.size() >= scheme.size() && iequals(t.substr(0, scheme.size()), scheme)) {
      t.remove_prefix(scheme.size());
      const size_t slash = t.find_first_of("/?");
      t = slash == std::string_view::npos ? std::string_view("/") : t.substr(slash);
      if (t.front() == '?') throw ProtocolError(400, "request target has no path");
      break;
    }
  }
  if (t != "*" && t.front() != '/') {
    throw ProtocolError(400, "request target must be a path starting with '/'");
  }
  req.method = std::string(method);
  const size_t q = t.find('?');
  req.path = std::string(t.substr(0, q));
  req.query = q == std::string_view::npos ? "" : std::string(t.substr(q + 1));
  return version[7] - '0';
}

std::pair<std::string, std::string> parse_header_line(std::string_view line) {
  // Obsolete line folding (RFC 9112 section 5.2) is refused rather than unfolded.
  if (line.front() == ' ' || line.front() == '\t')
    throw ProtocolError(400, "obsolete header line folding is not supported");
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) throw ProtocolError(400, "malformed header line (no ':')");
  const std::string_view name = line.substr(0, colon);
  // A space before the colon is refused too (RFC 9112 section 5.1): it enables smuggling.
  if (!is_token(name)) throw ProtocolError(400, "malformed header name");
  const std::string_view value = trim_ows(line.substr(colon + 1));
  for (char c : value) {
    if (is_ctl(c) && c != '\t') throw ProtocolError(400, "control character in header value");
  }
  return {lower(name), std::string(value)};
}

// The decimal value, saturated at SIZE_MAX (any such length is above every body limit).
size_t parse_content_length(std::string_view value) {
  if (value.empty()) throw ProtocolError(400, "empty Content-Length");
  size_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9')
      throw ProtocolError(400, fmt::format("Content-Length '{}' is not a decimal number", value));
    const size_t digit = static_cast<size_t>(c - '0');
    const size_t max = std::numeric_limits<size_t>::max();
    n = (n > (max - digit) / 10) ? max : n * 10 + digit;
  }
  return n;
}

// Every Content-Length header must carry the same value; nullopt when there is none.
std::optional<size_t> content_length(const Headers& headers) {
  std::optional<size_t> length;
  for (const auto& [name, value] : headers) {
    if (name != "content-length") continue;
    const size_t n = parse_content_length(value);
    if (length && *length != n) throw ProtocolError(400, "conflicting Content-Length headers");
    length = n;
  }
  return length;
}

// Whether any Connection header lists `option` (a comma-separated, case-insensitive list).
bool connection_has(const Headers& headers, std::string_view option) {
  for (const auto& [name, value] : headers) {
    if (name != "connection") continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      if (iequals(trim_ows(rest.substr(0, comma)), option)) return true;
      rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
    }
  }
  return false;
}

// Methods whose requests carry a body: without Content-Length the length is unknown to us.
bool carries_body(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH";
}

void apply_body_rules(RequestHead& head, size_t max_body_bytes) {
  const Request& req = head.request;
  // Transfer-Encoding is checked first: with Content-Length too it would be a smuggling vector.
  if (req.header("transfer-encoding"))
    throw ProtocolError(411,
                        "request bodies with Transfer-Encoding (chunked) are not "
                        "supported; send the body with a Content-Length");
  const std::optional<size_t> length = content_length(req.headers);
  if (length && *length > max_body_bytes)
    throw ProtocolError(413, fmt::format("request body of {} bytes exceeds the limit of {} bytes",
                                         *length, max_body_bytes));
  if (!length && carries_body(req.method))
    throw ProtocolError(411, fmt::format("{} needs a Content-Length header", req.method));
  head.content_length = length.value_or(0);
}

}  // namespace

size_t find_head_end(std::string_view buf, size_t from) {
  // Only a '\n' at or after `from` can be new; the checks look back across the old bytes.
  for (size_t i = buf.find('\n', from); i != std::string_view::npos; i = buf.find('\n', i + 1)) {
    const size_t line_start = (i >= 1 && buf[i - 1] == '\r') ? i - 1 : i;  // "\r\n" or "\n"
    if (line_start == 0 || buf[line_start - 1] == '\n') return i + 1;      // an empty line
  }
  return std::string_view::npos;
}

size_t leading_newlines(std::string_view buf) {
  const size_t n = buf.find_first_not_of("\r\n");
  return n == std::string_view::npos ? buf.size() : n;
}

RequestHead parse_head(std::string_view head, size_t max_body_bytes) {
  const std::vector<std::string_view> lines = split_lines(head);
  if (lines.empty()) throw ProtocolError(400, "empty request");
  RequestHead out;
  out.minor_version = parse_request_line(lines[0], out.request);
  // A stray CR inside a line is a control character, refused by both line parsers.
  for (size_t i = 1; i < lines.size(); ++i)
    out.request.headers.push_back(parse_header_line(lines[i]));
  apply_body_rules(out, max_body_bytes);
  const Headers& headers = out.request.headers;
  out.keep_alive = out.minor_version == 1
                       ? !connection_has(headers, "close")
                       : connection_has(headers, "keep-alive") && !connection_has(headers, "close");
  const std::string* expect = out.request.header("expect");
  out.expect_continue = out.minor_version == 1 && expect && iequals(*expect, "100-continue");
  return out;
}

}  // namespace fasa::http::detail

namespace fasa::http {

const std::string* Request::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (detail::iequals(key, name)) return &value;
  }
  return nullptr;
}

}  // namespace fasa::http
