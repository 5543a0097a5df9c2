#include "fasa/io/svg.h"

#include "fasa/core/error.h"
#include "fasa/io/atomic_file.h"

namespace fasa {

std::string svg_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t':
      case '\n':
      case '\r': out += c; break;
      default: out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    }
  }
  return out;
}

void write_svg_file(const std::string& path, std::string_view svg) {
  const std::string_view ext = ".svg";
  if (path.size() < ext.size() || path.compare(path.size() - ext.size(), ext.size(), ext) != 0) {
    fail(
        "cannot write '{}': pictures are written as SVG, give a file name ending in .svg "
        "(for a PNG, convert it: rsvg-convert -o FILE.png FILE.svg)",
        path);
  }
  write_file_atomic(path, svg);
}

}  // namespace fasa
