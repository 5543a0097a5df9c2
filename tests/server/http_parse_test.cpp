// The request-head parser on its own (no sockets): framing, header normalization and the rules
// that decide the status of a refused request.
#include "fasa/server/http_parse.h"

#include <gtest/gtest.h>

#include <string>

using fasa::http::detail::find_head_end;
using fasa::http::detail::leading_newlines;
using fasa::http::detail::parse_head;
using fasa::http::detail::ProtocolError;
using fasa::http::detail::RequestHead;

namespace {

constexpr size_t kMaxBody = 1000;

// The status parse_head refuses `head` with (0 if it accepts it), and the message in `message`.
int refusal(const std::string& head, std::string* message = nullptr) {
  try {
    parse_head(head, kMaxBody);
    return 0;
  } catch (const ProtocolError& e) {
    if (message) *message = e.what();
    return e.status;
  }
}

}  // namespace

TEST(HttpParse, FindsTheEndOfTheHeadWithCrlfOrBareLf) {
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nA: b\r\n\r\nBODY"), 24u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\nA: b\n\nBODY"), 21u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nA: b\n\r\n"), 23u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nA: b\r\n"), std::string::npos);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nA: b\r\n\r"), std::string::npos);
}

TEST(HttpParse, FindsAnEndThatStraddlesTheResumePoint) {
  const std::string head = "GET / HTTP/1.1\r\nA: b\r\n\r\n";
  for (size_t from = 0; from < head.size(); ++from) {
    EXPECT_EQ(find_head_end(head, from), head.size()) << "from " << from;
  }
}

TEST(HttpParse, SkipsOnlyLeadingEmptyLines) {
  EXPECT_EQ(leading_newlines("\r\n\nGET"), 3u);
  EXPECT_EQ(leading_newlines("GET\r\n"), 0u);
  EXPECT_EQ(leading_newlines("\r\n"), 2u);
}

TEST(HttpParse, SplitsTheTargetAndNormalizesHeaders) {
  const RequestHead h = parse_head(
      "POST /v1/completions?a=1&b=%20 HTTP/1.1\r\nContent-Type:\t application/json \r\n"
      "X-Empty:\r\nContent-Length: 12\r\n\r\n",
      kMaxBody);
  EXPECT_EQ(h.request.method, "POST");
  EXPECT_EQ(h.request.path, "/v1/completions");
  EXPECT_EQ(h.request.query, "a=1&b=%20");
  ASSERT_EQ(h.request.headers.size(), 3u);
  EXPECT_EQ(h.request.headers[0].first, "content-type");
  EXPECT_EQ(h.request.headers[0].second, "application/json");
  EXPECT_EQ(h.request.headers[1].second, "");
  ASSERT_NE(h.request.header("CONTENT-type"), nullptr);
  EXPECT_EQ(*h.request.header("Content-Type"), "application/json");
  EXPECT_EQ(h.request.header("accept"), nullptr);
  EXPECT_EQ(h.content_length, 12u);
  EXPECT_EQ(h.minor_version, 1);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_FALSE(h.expect_continue);
}

TEST(HttpParse, DecidesKeepAliveByVersionAndConnectionOptions) {
  auto keep = [](const std::string& version, const std::string& connection) {
    std::string head = "GET / " + version + "\r\n";
    if (!connection.empty()) head += "Connection: " + connection + "\r\n";
    return parse_head(head + "\r\n", kMaxBody).keep_alive;
  };
  EXPECT_TRUE(keep("HTTP/1.1", ""));
  EXPECT_FALSE(keep("HTTP/1.1", "close"));
  EXPECT_FALSE(keep("HTTP/1.1", "Upgrade, CLOSE"));
  EXPECT_FALSE(keep("HTTP/1.0", ""));
  EXPECT_TRUE(keep("HTTP/1.0", "Keep-Alive"));
}

TEST(HttpParse, SeesExpectContinue) {
  const auto h =
      parse_head("POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n", kMaxBody);
  EXPECT_TRUE(h.expect_continue);
}

TEST(HttpParse, AcceptsRepeatedEqualContentLengths) {
  const auto h =
      parse_head("POST / HTTP/1.1\r\nContent-Length: 7\r\nContent-Length: 007\r\n\r\n", kMaxBody);
  EXPECT_EQ(h.content_length, 7u);
}

TEST(HttpParse, RefusesMalformedRequestLines) {
  EXPECT_EQ(refusal("GARBAGE\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET  / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1 extra\r\n\r\n"), 400);
  EXPECT_EQ(refusal("G(T / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTQ/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET /\x01 HTTP/1.1\r\n\r\n"), 400);
  // A target that is not a path (found by the http fuzz target: "?" parsed to an empty path).
  std::string why;
  EXPECT_EQ(refusal("GET ? HTTP/1.0\r\n\r\n", &why), 400);
  EXPECT_NE(why.find("starting with '/'"), std::string::npos) << why;
  EXPECT_EQ(refusal("GET v1/models HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET http://host?x HTTP/1.1\r\n\r\n"), 400);
}

TEST(HttpParse, AcceptsAbsoluteFormAndAsteriskTargets) {
  RequestHead h = parse_head("GET http://127.0.0.1:8080/v1/models?x=1 HTTP/1.1\r\n\r\n", kMaxBody);
  EXPECT_EQ(h.request.path, "/v1/models");
  EXPECT_EQ(h.request.query, "x=1");
  h = parse_head("GET HTTPS://host HTTP/1.1\r\n\r\n", kMaxBody);
  EXPECT_EQ(h.request.path, "/");
  h = parse_head("OPTIONS * HTTP/1.1\r\n\r\n", kMaxBody);
  EXPECT_EQ(h.request.path, "*");
}

TEST(HttpParse, RefusesVersionsOtherThan10And11) {
  std::string message;
  EXPECT_EQ(refusal("GET / HTTP/2.0\r\n\r\n", &message), 505);
  EXPECT_NE(message.find("HTTP/2.0"), std::string::npos) << message;
  EXPECT_EQ(refusal("GET / HTTP/1.2\r\n\r\n"), 505);
  EXPECT_EQ(refusal("GET / HTTP/0.9\r\n\r\n"), 505);
}

TEST(HttpParse, RefusesBadHeaderLines) {
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nNoColon\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nName : v\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\n: v\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nA: b\r\n  folded\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n"), 400);
}

TEST(HttpParse, RefusesBadContentLengths) {
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 12a\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400);
}

TEST(HttpParse, RefusesBodiesItCannotTakeWith411Or413) {
  std::string message;
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &message), 411);
  EXPECT_NE(message.find("chunked"), std::string::npos) << message;
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\n\r\n"), 411);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n"), 413);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"), 413);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\n"), 0);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\n\r\n"), 0);
}
