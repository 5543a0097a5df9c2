// Cross-origin requests from web pages (`fasa serve --cors-origin`, off by default): which
// origins may call the API, the headers their answers carry, and the answer to a browser's
// preflight (OPTIONS before a POST with a JSON body or an Authorization header). An Origin that
// is not allowed gets no CORS header: the browser keeps the answer from the page.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fasa/server/http.h"

namespace fasa::server {

// Throws fasa::Error naming the first value of --cors-origin that is neither "*" (alone) nor an
// origin "scheme://host[:port]" (no path, not even "/"; no "null": a page of no origin, such
// as a file, is allowed by "*").
void check_cors_origins(const std::vector<std::string>& origins);

// The Access-Control-Allow-Origin of a request whose Origin header is `origin` (null: none):
// "*" when `origins` is {"*"}, the origin itself when listed (ASCII case aside), else nullopt
// (also when `origins` is empty: CORS off).
std::optional<std::string> allowed_origin(const std::vector<std::string>& origins,
                                          const std::string* origin);

// Every answer to an allowed origin: Access-Control-Allow-Origin `allow`, Vary: Origin, and
// Access-Control-Expose-Headers naming fasa's X-Fasa-* headers and Retry-After (which a page
// could not read otherwise).
http::Headers cors_answer_headers(const std::string& allow);

// A preflight's own headers (with cors_answer_headers): Access-Control-Allow-Methods `method`
// and OPTIONS, -Allow-Headers Authorization, Content-Type and every header name the preflight
// asks for (Access-Control-Request-Headers, `requested`; a name that is not an HTTP token is
// left out), -Max-Age.
http::Headers cors_preflight_headers(std::string_view method, const std::string* requested);
constexpr int kCorsMaxAgeSeconds = 7200;  // the longest Chromium keeps a preflight

// Forwards an answer to `w` with `extra` headers added.
class HeaderAdder : public http::ResponseWriter {
 public:
  HeaderAdder(http::ResponseWriter& w, http::Headers extra) : w_(w), extra_(std::move(extra)) {}
  void send(int status, std::string_view type, std::string_view body,
            const http::Headers& headers) override;
  bool begin_stream(int status, std::string_view type, const http::Headers& headers) override;
  bool write_chunk(std::string_view data) override { return w_.write_chunk(data); }
  void end_stream() override { w_.end_stream(); }
  bool client_gone() override { return w_.client_gone(); }

 private:
  http::Headers with_extra(const http::Headers& headers) const;
  http::ResponseWriter& w_;
  http::Headers extra_;
};

}  // namespace fasa::server
