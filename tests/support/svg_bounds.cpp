#include "support/svg_bounds.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "fasa/core/error.h"

namespace fasa::test {

namespace {

double number(const std::string& s, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
    fail("svg: {} is '{}', not a number", what, s);
  return v;
}

double attr_number(const XmlElement& e, const std::string& key) {
  return number(e.attr(key), "<" + e.name + "> " + key);
}

// The numbers of a list such as "1,2 3.5,4" (commas and spaces between them).
std::vector<double> numbers(const std::string& s, const std::string& what) {
  std::vector<double> out;
  std::string cur;
  for (char c : s + " ") {
    if (c == ',' || c == ' ' || c == '\n') {
      if (!cur.empty()) out.push_back(number(cur, what));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

void grow(SvgBox& b, double x, double y) {
  b.x0 = std::min(b.x0, x), b.x1 = std::max(b.x1, x);
  b.y0 = std::min(b.y0, y), b.y1 = std::max(b.y1, y);
}

// A path of absolute M, L, H and V commands: the box of its points.
void path_box(const std::string& d, SvgBox& b) {
  double x = 0.0, y = 0.0;
  size_t i = 0;
  while (i < d.size()) {
    const char cmd = d[i++];
    if (cmd == ' ') continue;
    size_t j = i;
    while (j < d.size() && !std::isalpha(static_cast<unsigned char>(d[j]))) ++j;
    const std::vector<double> v = numbers(d.substr(i, j - i), "path data");
    i = j;
    if ((cmd == 'M' || cmd == 'L') && v.size() == 2) {
      x = v[0], y = v[1];
    } else if (cmd == 'H' && v.size() == 1) {
      x = v[0];
    } else if (cmd == 'V' && v.size() == 1) {
      y = v[0];
    } else {
      fail("svg: path command '{}' with {} numbers is not read here", cmd, v.size());
    }
    grow(b, x, y);
  }
}

void text_box(const XmlElement& e, double font_size, const TextWidth& width, SvgBox& b) {
  const double x = attr_number(e, "x"), y = attr_number(e, "y");
  const double w = width(e.text, font_size);
  const std::string anchor = e.attr("text-anchor");
  const double x0 = anchor == "end" ? x - w : anchor == "middle" ? x - w / 2 : x;
  b = {b.tag, b.cls, e.text, x0, y - 0.8 * font_size, x0 + w, y + 0.25 * font_size, b.order};
  const std::string t = e.attr("transform");
  if (t.empty()) return;
  const auto open = t.find('(');
  if (t.rfind("rotate(", 0) != 0 || t.back() != ')') fail("svg: transform '{}' not read", t);
  const std::vector<double> r = numbers(t.substr(open + 1, t.size() - open - 2), "rotate");
  if (r.size() != 3 || std::fabs(std::fabs(r[0]) - 90.0) > 1e-9)
    fail("svg: transform '{}' not read (rotate(+-90 CX CY) only)", t);
  // A quarter turn about (cx, cy) maps the box's x extent onto y and its y extent onto x.
  const double cx = r[1], cy = r[2];
  const double ax0 = b.x0 - cx, ax1 = b.x1 - cx, ay0 = b.y0 - cy, ay1 = b.y1 - cy;
  const double s = r[0] > 0 ? 1.0 : -1.0;  // rotate(A): (x, y) -> (-s y, s x) about the centre
  const double nx0 = std::min(-s * ay0, -s * ay1), nx1 = std::max(-s * ay0, -s * ay1);
  const double ny0 = std::min(s * ax0, s * ax1), ny1 = std::max(s * ax0, s * ax1);
  b.x0 = cx + nx0, b.x1 = cx + nx1, b.y0 = cy + ny0, b.y1 = cy + ny1;
}

bool drawn_box(const XmlElement& e, double font_size, const TextWidth& width, SvgBox& b) {
  b.x0 = b.y0 = INFINITY, b.x1 = b.y1 = -INFINITY;
  if (e.name == "rect") {
    if (e.attr("width").find('%') != std::string::npos) return false;  // the background
    const double x = e.attr("x").empty() ? 0.0 : attr_number(e, "x");
    const double y = e.attr("y").empty() ? 0.0 : attr_number(e, "y");
    grow(b, x, y);
    grow(b, x + attr_number(e, "width"), y + attr_number(e, "height"));
  } else if (e.name == "line") {
    grow(b, attr_number(e, "x1"), attr_number(e, "y1"));
    grow(b, attr_number(e, "x2"), attr_number(e, "y2"));
  } else if (e.name == "circle") {
    const double cx = attr_number(e, "cx"), cy = attr_number(e, "cy"), r = attr_number(e, "r");
    grow(b, cx - r, cy - r);
    grow(b, cx + r, cy + r);
  } else if (e.name == "polyline") {
    const std::vector<double> v = numbers(e.attr("points"), "polyline points");
    if (v.empty() || v.size() % 2 != 0) fail("svg: polyline points '{}'", e.attr("points"));
    for (size_t i = 0; i < v.size(); i += 2) grow(b, v[i], v[i + 1]);
  } else if (e.name == "path") {
    path_box(e.attr("d"), b);
  } else if (e.name == "text") {
    text_box(e, font_size, width, b);
  } else {
    return false;
  }
  return true;
}

void walk(const XmlElement& e, double font_size, const TextWidth& width, std::vector<SvgBox>& out) {
  if (!e.attr("font-size").empty()) font_size = attr_number(e, "font-size");
  SvgBox b{e.name, e.attr("class"), "", 0, 0, 0, 0, out.size()};
  if (drawn_box(e, font_size, width, b)) out.push_back(b);
  if (e.name == "text") return;
  for (const XmlElement& c : e.children) walk(c, font_size, width, out);
}

}  // namespace

double estimated_text_width(const std::string& text, double font_size) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // UTF-8 characters
  return 0.55 * font_size * static_cast<double>(n);
}

std::vector<SvgBox> svg_boxes(const XmlElement& root, const TextWidth& width) {
  std::vector<SvgBox> out;
  walk(root, 16.0, width, out);  // 16 px: SVG's initial font size
  return out;
}

std::pair<double, double> svg_view_size(const XmlElement& root) {
  const std::vector<double> v = numbers(root.attr("viewBox"), "viewBox");
  if (v.size() != 4 || v[0] != 0.0 || v[1] != 0.0)
    fail("svg: viewBox '{}' is not '0 0 W H'", root.attr("viewBox"));
  if (attr_number(root, "width") != v[2] || attr_number(root, "height") != v[3])
    fail("svg: viewBox '{}' differs from width {} and height {}", root.attr("viewBox"),
         root.attr("width"), root.attr("height"));
  return {v[2], v[3]};
}

bool boxes_overlap(const SvgBox& a, const SvgBox& b, double slack) {
  const double w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  const double h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  return w > slack && h > slack;
}

}  // namespace fasa::test
