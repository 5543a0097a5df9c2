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

namespace {

// Each ASCII character's width class (em), at least DejaVu Sans's own width of it.
double char_em(unsigned char c) {
  static const std::string_view kNarrow = " !'(),-./:;[\\]|fijlrtIJ";  // DejaVu <= 0.41 em
  static const std::string_view kWide = "mwMW%@#+<=>^~";               // DejaVu <= 1 em
  if (c >= 0x80 || kWide.find(static_cast<char>(c)) != std::string_view::npos) return 1.0;
  if (kNarrow.find(static_cast<char>(c)) != std::string_view::npos) return 0.42;
  if ((c >= 'A' && c <= 'Z') || c == '&') return 0.8;  // DejaVu <= 0.79 em
  return 0.64;                                         // lower case, digits: DejaVu <= 0.64 em
}

}  // namespace

double svg_text_width(std::string_view text, double font_size) {
  double em = 0.0;
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c & 0xC0) != 0x80) em += char_em(c);  // a UTF-8 continuation byte adds nothing
  }
  return em * font_size;
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
