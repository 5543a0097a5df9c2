#include "fasa/calibrate/heatmap.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace fasa {

namespace {

// A perceptual-ish ramp from pale yellow (0) through teal to dark blue (1).
std::string colour(double v) {
  v = std::clamp(v, 0.0, 1.0);
  const double stops[3][3] = {{255, 250, 205}, {44, 162, 149}, {8, 29, 88}};
  const double t = v < 0.5 ? v * 2.0 : (v - 0.5) * 2.0;
  const double* a = stops[v < 0.5 ? 0 : 1];
  const double* b = stops[v < 0.5 ? 1 : 2];
  auto mix = [&](int i) { return static_cast<int>(std::lround(a[i] + (b[i] - a[i]) * t)); };
  return fmt::format("rgb({},{},{})", mix(0), mix(1), mix(2));
}

}  // namespace

std::string calibration_heatmap_svg(const Calibration& c) {
  const int cell = 14, left = 70, top = 50, n_fc = c.n_fc();
  const int width = std::max(left + n_fc * cell + 90, 720);
  const int height = top + c.n_layers * cell + 50;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"20\" font-size=\"13\">{} — mean contextual agreement per FC "
      "(K = {}, {} layout)</text>\n",
      width, height, left, c.model_name.empty() ? c.arch : c.model_name, c.k,
      fc_layout_name(c.fc_layout));
  for (int l = 0; l < c.n_layers; ++l) {
    const int y = top + l * cell;
    if (l % 5 == 0 || l == c.n_layers - 1) {
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">layer {}</text>\n", left - 6,
                       y + cell - 3, l);
    }
    for (int f = 0; f < n_fc; ++f) {
      double m = 0.0;
      for (int h = 0; h < c.n_heads; ++h) m += c.ca(l, h)[f];
      m /= c.n_heads;
      s += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>layer {} FC {}: "
          "{:.3f}</title></rect>\n",
          left + f * cell, y, cell, cell, colour(m), l, f, m);
    }
  }
  const int axis_y = top + c.n_layers * cell + 16;
  for (int f = 0; f < n_fc; f += std::max(1, n_fc / 8)) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     left + f * cell + cell / 2, axis_y, f);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\">frequency chunk (0 = highest frequency)</text>\n",
                   left, axis_y + 18);
  const int bar_x = left + n_fc * cell + 30;
  for (int i = 0; i < 100; ++i) {
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"3\" fill=\"{}\"/>\n", bar_x,
                     top + (99 - i) * 3, colour(i / 99.0));
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\">1.0</text>\n", bar_x + 18, top + 8);
  s += fmt::format("<text x=\"{}\" y=\"{}\">0.0</text>\n", bar_x + 18, top + 300);
  s += "</svg>\n";
  return s;
}

}  // namespace fasa
