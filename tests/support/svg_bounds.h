// Where the marks of an SVG document lie, for the tests of the SVG writers (eval's line plots,
// calibrate's heatmap): each drawn element's box in picture pixels, worked out from its
// geometry attributes alone, so that a test can check that nothing leaves the picture and that
// labels do not overlap. A <text>'s box comes from its x, y (baseline), text-anchor, font-size
// (its own or the nearest ancestor's) and an estimated width of 0.55 em per character (about a
// sans-serif font's average), 0.8 em above the baseline and 0.25 em below; a rotate(A CX CY)
// transform of +-90 degrees turns the box about (CX, CY).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "support/xml_check.h"

namespace fasa::test {

struct SvgBox {
  std::string tag, cls, text;  // the element's name, class attribute and (for <text>) text
  double x0 = 0.0, y0 = 0.0, x1 = 0.0, y1 = 0.0;
  size_t order = 0;  // its place in document order among the drawn elements
};

// The estimated width (px) of `text` (UTF-8) at `font_size` px: 0.55 em per character.
double estimated_text_width(const std::string& text, double font_size);

// A text's width (px) from its text and font size.
using TextWidth = std::function<double(const std::string& text, double font_size)>;

// Every drawn element below `root` (rect, line, circle, polyline, path, text) in document
// order, texts measured by `width`; a rect sized in percent (the background) is left out.
// Throws fasa::Error on a geometry attribute that is not a number, a path command other than
// M, L, H, V (absolute), or a transform other than rotate(+-90 CX CY).
std::vector<SvgBox> svg_boxes(const XmlElement& root,
                              const TextWidth& width = estimated_text_width);

// The root's viewBox "0 0 W H" as {W, H}; throws fasa::Error when it is absent, does not start
// at the origin, or differs from the width and height attributes.
std::pair<double, double> svg_view_size(const XmlElement& root);

// Whether two boxes share an area wider and higher than `slack` px.
bool boxes_overlap(const SvgBox& a, const SvgBox& b, double slack = 0.0);

}  // namespace fasa::test
