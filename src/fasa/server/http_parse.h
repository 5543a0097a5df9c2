// Internal to the HTTP server: the request-head parser (RFC 9112 sections 2-3, 6), kept apart
// from the sockets so it is a pure function of bytes.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fasa/server/http.h"

namespace fasa::http::detail {

// A request the server refuses itself: answered with `status` and an error_json body, then the
// connection is closed (after a protocol error the byte stream cannot be trusted).
class ProtocolError : public std::runtime_error {
 public:
  ProtocolError(int status, const std::string& message)
      : std::runtime_error(message), status(status) {}
  int status;
};

// The offset just past the empty line that ends the head (CRLF CRLF, or bare LFs), or npos while
// the head is incomplete. `from`: bytes before it were searched already (a slow client's head
// arrives in many reads; each is scanned once).
size_t find_head_end(std::string_view buf, size_t from = 0);

// How many CR/LF bytes start `buf`: RFC 9112 section 2.2 lets a server ignore empty lines before
// a request line (some clients send a CRLF after a POST body).
size_t leading_newlines(std::string_view buf);

struct RequestHead {
  Request request;               // method, path, query and headers (body and peer not yet set)
  int minor_version = 1;         // HTTP/1.minor
  size_t content_length = 0;     // bytes of body that follow the head
  bool keep_alive = true;        // the connection stays open after the response
  bool expect_continue = false;  // "Expect: 100-continue": the client waits for 100 Continue
};

// Parses a complete head (as delimited by find_head_end) and applies the body rules. Throws
// ProtocolError: 400 malformed request line, header or Content-Length; 505 not HTTP/1.0 or 1.1;
// 411 Transfer-Encoding or a body-carrying method without Content-Length; 413 Content-Length
// above max_body_bytes.
RequestHead parse_head(std::string_view head, size_t max_body_bytes);

}  // namespace fasa::http::detail
