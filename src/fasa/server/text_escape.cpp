#include "fasa/server/text_escape.h"

#include <fmt/format.h>

namespace fasa::server {

std::string header_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u > 0x20 && u < 0x7f && c != '%' && c != ',') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

std::string ignored_fields_header(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& f : names) list += (list.empty() ? "" : ", ") + header_text(f);
  return list;
}

std::string log_text(std::string_view s, size_t max_bytes) {
  const std::string_view kept = s.substr(0, max_bytes);
  std::string out;
  out.reserve(kept.size());
  for (const char c : kept) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '\\') {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  if (s.size() > kept.size()) out += fmt::format("...({} more bytes)", s.size() - kept.size());
  return out;
}

}  // namespace fasa::server
