// Fuzz target: the HTTP/1.1 request-head parser (server/http_parse.cpp), driven the way a
// connection drives it (http_connection.cpp): skip empty lines, find the end of the head as the
// bytes arrive in reads of a few bytes, parse it, skip the body, next request (pipelining).
// Input: byte 0 is the read size (1..16), the rest is the byte stream. Contract: parse_head
// returns or throws ProtocolError with a status the server sends (400, 411, 413, 505) and a
// message error_json turns into a JSON body; the incremental head search finds what a search
// from the start finds; a parsed head holds a token method, a target without control
// characters, lower-case header names and a body length within the limit. Every response the
// server would write from the request's bytes (its path, query and header values as header
// values, raw or percent-encoded, and in an error message) is one well-formed HTTP response
// with exactly the header lines it was given, or is refused whole (BadHeader) when a raw value
// holds a control byte: never a split one.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/server/http.h"
#include "fasa/server/http_parse.h"
#include "fasa/server/http_response.h"
#include "fasa/server/text_escape.h"
#include "fuzz_util.h"

namespace fasa::fuzz {
namespace {

using http::detail::ProtocolError;

constexpr size_t kMaxBody = 1 << 10;
constexpr size_t npos = std::string_view::npos;

// Where the head that starts `buf` ends, searched as a connection does: after each read of
// `step` bytes, from where the previous search stopped; checked against one search over all.
size_t head_end_incremental(std::string_view buf, size_t step) {
  size_t scanned = 0;
  for (size_t n = std::min(step, buf.size());; n = std::min(n + step, buf.size())) {
    const std::string_view seen = buf.substr(0, n);
    const size_t end = http::detail::find_head_end(seen, scanned);
    FASA_FUZZ_EXPECT(end == http::detail::find_head_end(seen, 0));
    if (end != npos) {
      FASA_FUZZ_EXPECT(end <= n && seen[end - 1] == '\n');
      return end;
    }
    if (n == buf.size()) return npos;
    scanned = n;
  }
}

bool is_lower_token(const std::string& s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (c >= 'A' && c <= 'Z') return false;
    if (static_cast<unsigned char>(c) <= 0x20 || c == ':' || c == 0x7f) return false;
  }
  return true;
}

void check_error_body(int status, const std::string& message) {
  const std::string body = http::error_json(status, message, "invalid_request_error");
  FASA_FUZZ_EXPECT(nlohmann::json::accept(body));
}

// The header lines of a response (its head's lines after the status line).
size_t header_lines(std::string_view bytes) {
  const std::string_view head = bytes.substr(0, bytes.find("\r\n\r\n"));
  size_t n = 0;
  for (size_t at = head.find("\r\n"); at != npos; at = head.find("\r\n", at + 2)) ++n;
  return n;
}

// Writes a whole and a streamed response carrying `value` in a header: refused (BadHeader)
// exactly when `value` is no header value, else one response with its 4 (3) header lines.
void check_response_with(std::string_view value, bool keep_alive) {
  const http::Headers headers = {{"X-Echo", std::string(value)}};
  try {
    const std::string whole =
        http::detail::whole_response(200, "application/json", "{}", headers, keep_alive);
    FASA_FUZZ_EXPECT(http::detail::is_header_value(value));
    FASA_FUZZ_EXPECT(http::detail::response_problem(whole).empty());
    FASA_FUZZ_EXPECT(header_lines(whole) == 4);  // Content-Type, X-Echo, Connection, Length
    const std::string stream =
        http::detail::response_head(200, "text/event-stream", headers, keep_alive) +
        "Transfer-Encoding: chunked\r\n\r\n" +
        fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", value.size() + 1, std::string(value) + "x");
    FASA_FUZZ_EXPECT(http::detail::response_problem(stream).empty());
  } catch (const http::detail::BadHeader&) {
    FASA_FUZZ_EXPECT(!http::detail::is_header_value(value));
  }
}

void check_responses(const http::Request& req) {
  check_response_with(req.path, true);
  check_response_with(req.query, false);
  check_response_with(server::header_text(req.path + req.query), true);
  for (const auto& [name, value] : req.headers) {
    check_response_with(value, true);
    check_response_with(server::header_text(name + value), false);
  }
  const std::string err = http::detail::error_response(404, "no such endpoint: " + req.path, true);
  FASA_FUZZ_EXPECT(http::detail::response_problem(err).empty());
}

// Raw bytes as a header value: refused or well-formed (never split) whatever they hold.
void check_raw_value(std::string_view bytes) {
  check_response_with(bytes.substr(0, 256), true);
  FASA_FUZZ_EXPECT(http::detail::is_header_value(server::header_text(bytes.substr(0, 256))));
}

void run(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const size_t step = 1 + data[0] % 16;
  std::string_view buf = as_text(data + 1, size - 1);
  check_raw_value(buf);
  for (int requests = 0; requests < 64; ++requests) {
    buf.remove_prefix(http::detail::leading_newlines(buf));
    if (buf.empty()) return;
    const size_t end = head_end_incremental(buf, step);
    if (end == npos) return;
    http::detail::RequestHead head;
    try {
      head = http::detail::parse_head(buf.substr(0, end), kMaxBody);
    } catch (const ProtocolError& e) {
      FASA_FUZZ_EXPECT(e.status == 400 || e.status == 411 || e.status == 413 || e.status == 505);
      check_error_body(e.status, e.what());
      return;  // the connection closes after a protocol error
    }
    const http::Request& req = head.request;
    FASA_FUZZ_EXPECT(!req.method.empty() && req.path.size() + req.query.size() > 0);
    for (const char c : req.path + req.query) {
      FASA_FUZZ_EXPECT(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
    }
    for (const auto& [name, value] : req.headers) {
      FASA_FUZZ_EXPECT(is_lower_token(name));
      FASA_FUZZ_EXPECT(req.header(name) != nullptr);
    }
    FASA_FUZZ_EXPECT(head.minor_version == 0 || head.minor_version == 1);
    FASA_FUZZ_EXPECT(head.content_length <= kMaxBody);
    check_responses(req);
    if (!head.keep_alive) return;
    buf.remove_prefix(std::min(buf.size(), end + head.content_length));
  }
}

}  // namespace
}  // namespace fasa::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fasa::fuzz::run(data, size);
  return 0;
}
