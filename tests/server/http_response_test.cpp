// What the server writes (server/http_response) and how it is read back: a header with a
// control byte is refused, never written; response_problem accepts exactly one well-formed
// response; text_escape keeps client bytes out of headers and log lines.
#include <gtest/gtest.h>

#include <string>

#include "fasa/server/http_response.h"
#include "fasa/server/text_escape.h"

namespace fasa::http::detail {
namespace {

TEST(HttpResponse, WhatTheServerWritesIsOneWellFormedResponse) {
  EXPECT_EQ(response_problem(
                whole_response(200, "application/json", "{}", {{"X-A", "b, c"}}, true)),
            "");
  EXPECT_EQ(response_problem(whole_response(204, "", "", {}, true)), "");
  EXPECT_EQ(response_problem(error_response(503, "busy", false, {{"Retry-After", "1"}})), "");
  const std::string head =
      response_head(200, "text/event-stream", {}, true) + "Transfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(response_problem(head + "5\r\nhello\r\n0\r\n\r\n"), "");
  EXPECT_EQ(response_problem(response_head(200, "text/plain", {}, false) + "\r\nto the end"), "");
}

TEST(HttpResponse, ProblemsAreNamed) {
  const std::string ok = whole_response(200, "text/plain", "abc", {}, true);
  EXPECT_NE(response_problem(ok + "HTTP/1.1 200 OK\r\n\r\n").find("after the body"),
            std::string::npos);  // a second response
  EXPECT_NE(response_problem(ok.substr(0, ok.size() - 1)).find("shorter"), std::string::npos);
  EXPECT_NE(response_problem("HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 0\r\n\r\n")
                .find("control byte"),
            std::string::npos);
  EXPECT_NE(response_problem("HTTP/1.1 200 OK\r\nBad Name: a\r\nContent-Length: 0\r\n\r\n")
                .find("no token"),
            std::string::npos);
  EXPECT_NE(response_problem("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n")
                .find("twice"),
            std::string::npos);
  EXPECT_NE(response_problem("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\nx").find("neither"),
            std::string::npos);
  EXPECT_NE(response_problem("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")
                .find("cut short"),
            std::string::npos);
  EXPECT_NE(response_problem("HTTP/1.0 200 OK\r\n\r\n").find("status line"), std::string::npos);
}

TEST(HttpResponse, HeadersWithControlBytesAreRefusedNotWritten) {
  for (const std::string& value : {std::string("a\r\nSet-Cookie: x=1"), std::string("a\0b", 3),
                                   std::string("a\nb"), std::string("a\rb")}) {
    EXPECT_THROW(whole_response(200, "text/plain", "", {{"X-Fasa-Ignored-Fields", value}}, true),
                 BadHeader);
    EXPECT_THROW(check_headers("text/plain", {{"X", value}}), BadHeader);
  }
  EXPECT_THROW(check_headers("text/plain", {{"X Y", "v"}}), BadHeader);
  EXPECT_THROW(check_headers("text/plain", {{"", "v"}}), BadHeader);
  EXPECT_THROW(check_headers("text/plain\r\nX: y", {}), BadHeader);
  EXPECT_NO_THROW(check_headers("application/json; charset=utf-8", {{"X", "a\tb \xc3\xa9"}}));
}

}  // namespace
}  // namespace fasa::http::detail

namespace fasa::server {
namespace {

TEST(TextEscape, HeaderTextIsAHeaderValueThatDecodesBack) {
  EXPECT_EQ(header_text("foo.bar_baz"), "foo.bar_baz");
  EXPECT_EQ(header_text("\r\nAccess-Control-Allow-Origin: *"),
            "%0D%0AAccess-Control-Allow-Origin:%20*");
  EXPECT_EQ(header_text("a,b%c"), "a%2Cb%25c");
  EXPECT_EQ(header_text(std::string("\0\x7f\xff", 3)), "%00%7F%FF");
  EXPECT_TRUE(http::detail::is_header_value(header_text(std::string("\r\n\0x", 4))));
}

TEST(TextEscape, LogTextIsOneBoundedLine) {
  EXPECT_EQ(log_text("policy=fasa", 100), "policy=fasa");
  EXPECT_EQ(log_text("a\nfasa serve: forged\r\n", 100), "a\\x0afasa serve: forged\\x0d\\x0a");
  EXPECT_EQ(log_text("back\\slash", 100), "back\\x5cslash");
  EXPECT_EQ(log_text(std::string(200189, 'x'), 10), "xxxxxxxxxx...(200179 more bytes)");
  EXPECT_EQ(log_text("caf\xc3\xa9", 100), "caf\xc3\xa9");  // UTF-8 kept
}

}  // namespace
}  // namespace fasa::server
