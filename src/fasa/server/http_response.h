// Internal to the HTTP server: the bytes of a response, and a reader that says whether bytes
// are exactly one well-formed HTTP/1.1 response (the fuzz targets and tests hold every response
// the server writes to it). A header name must be an RFC 9110 token and a value may hold no
// control byte but tab (no CR, LF or NUL): a response with any other header is refused whole,
// never written split.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "fasa/server/http.h"

namespace fasa::http::detail {

// A header the server must not write (a name that is no token, a value with a control byte).
class BadHeader : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

bool is_token(std::string_view s);         // RFC 9110 section 5.6.2 (non-empty)
bool is_header_value(std::string_view s);  // visible bytes, spaces and tabs (obs-text too)
// Throws BadHeader naming the first header (or the content type) that is neither.
void check_headers(std::string_view content_type, const Headers& headers);

// The status line, Content-Type (when non-empty), `headers` and Connection; no empty line.
// Throws BadHeader (check_headers).
std::string response_head(int status, std::string_view content_type, const Headers& headers,
                          bool keep_alive);
// A whole response with Content-Length (a 204 without one, and no body).
std::string whole_response(int status, std::string_view content_type, std::string_view body,
                           const Headers& headers, bool keep_alive);
// An error_json body: "invalid_request_error" below 500, "server_error" from 500.
std::string error_response(int status, std::string_view message, bool keep_alive,
                           const Headers& headers = {});

// "" when `bytes` is exactly one response: a status line "HTTP/1.1 NNN reason", header lines
// (token names, values without control bytes, at most one Content-Type, Content-Length and
// Transfer-Encoding, not both of the last two), an empty line, then exactly the body that its
// framing gives (Content-Length bytes, whole chunks ending in the last chunk, or, without
// either, everything to the end when the response closes the connection) and nothing after it.
// Otherwise what is wrong, for a test's message.
std::string response_problem(std::string_view bytes);

}  // namespace fasa::http::detail
