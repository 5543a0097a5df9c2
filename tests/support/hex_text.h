// Byte strings in tokenizer goldens: hex-encoded in the JSON files, escaped in failure messages.
#pragma once

#include <cstdio>
#include <string>

namespace fasa::test {

// "48690a" -> "Hi\n"
inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// Control bytes as \xNN, so a failure message shows them.
inline std::string escaped(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace fasa::test
