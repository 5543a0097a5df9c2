// Client bytes made safe for the two places the server writes them besides JSON bodies: a
// response header and its request log line. Neither may carry a CR, LF or NUL of the client's
// (a header split into two, a forged log line).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fasa::server {

// Percent-encodes every byte outside '!'..'~' and the bytes '%' and ',' (the separator of a
// header's list): the result is a header value, and decoding it gives `s` back.
std::string header_text(std::string_view s);

// X-Fasa-Ignored-Fields: the names of the fields a request's body held that this server does
// not know, each header_text()-encoded, separated by ", ".
std::string ignored_fields_header(const std::vector<std::string>& names);

// Control bytes (below 0x20, and 0x7f) and '\' as \xNN; at most `max_bytes` of `s` are kept,
// then "...(N more bytes)". Bytes from 0x80 (UTF-8) are kept as they are.
std::string log_text(std::string_view s, size_t max_bytes);

}  // namespace fasa::server
