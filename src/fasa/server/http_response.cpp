#include "fasa/server/http_response.h"

#include <cctype>

#include <fmt/format.h>

namespace fasa::http::detail {

namespace {

constexpr std::string_view kCrlf = "\r\n";

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

// A printable excerpt of client or server bytes for a message.
std::string shown(std::string_view s) {
  std::string out;
  for (const char c : s.substr(0, 60)) {
    const auto u = static_cast<unsigned char>(c);
    out += u >= 0x20 && u < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  return s.size() > 60 ? out + "..." : out;
}

// The chunked body that starts `rest`: "" when it is whole chunks, the last chunk and nothing
// after them.
std::string chunked_problem(std::string_view rest) {
  for (;;) {
    const size_t eol = rest.find(kCrlf);
    if (eol == std::string_view::npos) return "a chunk size line without CRLF";
    const std::string_view size_text = rest.substr(0, eol);
    if (size_text.empty() || size_text.size() > 15) return "a bad chunk size line";
    size_t size = 0;
    for (const char c : size_text) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return "a chunk size that is not hex";
      size = size * 16 + static_cast<size_t>(std::isdigit(static_cast<unsigned char>(c))
                                                 ? c - '0'
                                                 : std::tolower(c) - 'a' + 10);
    }
    rest.remove_prefix(eol + 2);
    if (size == 0) {
      if (rest != kCrlf) return fmt::format("bytes after the last chunk: '{}'", shown(rest));
      return "";
    }
    if (rest.size() < size + 2 || rest.substr(size, 2) != kCrlf) return "a chunk cut short";
    rest.remove_prefix(size + 2);
  }
}

}  // namespace

bool is_token(std::string_view s) {
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  if (s.empty()) return false;
  for (const char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && kSpecials.find(c) == std::string_view::npos)
      return false;
  }
  return true;
}

bool is_header_value(std::string_view s) {
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) return false;
  }
  return true;
}

void check_headers(std::string_view content_type, const Headers& headers) {
  if (!is_header_value(content_type)) {
    throw BadHeader(
        fmt::format("refused to send a response: its content type '{}' holds a "
                    "control byte",
                    shown(content_type)));
  }
  for (const auto& [name, value] : headers) {
    if (!is_token(name) || !is_header_value(value)) {
      throw BadHeader(
          fmt::format("refused to send a response: header '{}' holds a control byte "
                      "or is no token",
                      shown(name)));
    }
  }
}

std::string response_head(int status, std::string_view content_type, const Headers& headers,
                          bool keep_alive) {
  check_headers(content_type, headers);
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", status, status_text(status));
  if (!content_type.empty()) out += fmt::format("Content-Type: {}\r\n", content_type);
  for (const auto& [name, value] : headers) out += fmt::format("{}: {}\r\n", name, value);
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  return out;
}

std::string whole_response(int status, std::string_view content_type, std::string_view body,
                           const Headers& headers, bool keep_alive) {
  std::string out = response_head(status, content_type, headers, keep_alive);
  if (status == 204) return out + "\r\n";  // RFC 9110 section 8.6: no Content-Length, no body
  out += fmt::format("Content-Length: {}\r\n\r\n", body.size());
  out += body;
  return out;
}

std::string error_response(int status, std::string_view message, bool keep_alive,
                           const Headers& headers) {
  const char* type = status < 500 ? "invalid_request_error" : "server_error";
  return whole_response(status, "application/json", error_json(status, message, type), headers,
                        keep_alive);
}

std::string response_problem(std::string_view bytes) {
  const size_t line_end = bytes.find(kCrlf);
  if (line_end == std::string_view::npos) return "no status line";
  const std::string_view line = bytes.substr(0, line_end);
  if (line.size() < 13 || line.substr(0, 9) != "HTTP/1.1 " || line[12] != ' ' ||
      !std::isdigit(static_cast<unsigned char>(line[9])) ||
      !std::isdigit(static_cast<unsigned char>(line[10])) ||
      !std::isdigit(static_cast<unsigned char>(line[11])) || !is_header_value(line)) {
    return fmt::format("a bad status line '{}'", shown(line));
  }
  const int status = std::stoi(std::string(line.substr(9, 3)));
  std::string_view rest = bytes.substr(line_end + 2);
  int n_type = 0, n_length = 0, n_encoding = 0;
  size_t length = 0;
  bool chunked = false, closes = false;
  for (;;) {
    const size_t eol = rest.find(kCrlf);
    if (eol == std::string_view::npos) return "the head does not end in an empty line";
    const std::string_view h = rest.substr(0, eol);
    rest.remove_prefix(eol + 2);
    if (h.empty()) break;
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos)
      return fmt::format("a header line '{}' without ':'", shown(h));
    const std::string_view name = h.substr(0, colon);
    std::string_view value = h.substr(colon + 1);
    if (!is_token(name)) return fmt::format("a header name '{}' that is no token", shown(name));
    if (!is_header_value(value))
      return fmt::format("header '{}' holds a control byte", shown(name));
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    if (iequals(name, "content-type")) ++n_type;
    if (iequals(name, "connection")) closes = iequals(value, "close");
    if (iequals(name, "transfer-encoding")) {
      ++n_encoding;
      chunked = iequals(value, "chunked");
      if (!chunked) return fmt::format("Transfer-Encoding '{}'", shown(value));
    }
    if (iequals(name, "content-length")) {
      ++n_length;
      if (value.empty() || value.size() > 15) return "a bad Content-Length";
      length = 0;
      for (const char c : value) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return "a bad Content-Length";
        length = length * 10 + static_cast<size_t>(c - '0');
      }
    }
  }
  if (n_type > 1 || n_length > 1 || n_encoding > 1) return "a framing header given twice";
  if (n_length + n_encoding > 1) return "both Content-Length and Transfer-Encoding";
  if (status == 204 || status < 200) {
    return rest.empty() ? "" : fmt::format("bytes after a bodiless response: '{}'", shown(rest));
  }
  if (chunked) return chunked_problem(rest);
  if (n_length == 1) {
    if (rest.size() == length) return "";
    return rest.size() < length
               ? "a body shorter than its Content-Length"
               : fmt::format("bytes after the body: '{}'", shown(rest.substr(length)));
  }
  return closes ? "" : "a body with neither Content-Length nor chunks on a kept connection";
}

}  // namespace fasa::http::detail
