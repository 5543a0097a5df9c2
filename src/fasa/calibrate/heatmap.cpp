#include "fasa/calibrate/heatmap.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "fasa/core/error.h"
#include "fasa/io/svg.h"

namespace fasa {

namespace {

// A perceptual-ish ramp from pale yellow (0) through teal to dark blue (1), as "rgb(r,g,b)".
std::string colour(double v) {
  v = std::clamp(v, 0.0, 1.0);
  const double stops[3][3] = {{255, 250, 205}, {44, 162, 149}, {8, 29, 88}};
  const double t = v < 0.5 ? v * 2.0 : (v - 0.5) * 2.0;
  const double* a = stops[v < 0.5 ? 0 : 1];
  const double* b = stops[v < 0.5 ? 1 : 2];
  auto mix = [&](int i) { return std::lround(a[i] + (b[i] - a[i]) * t); };
  return fmt::format("rgb({},{},{})", mix(0), mix(1), mix(2));
}

// A row's layer number is labelled when every layer is covered: every 5 layers and the last;
// when only some are (a hybrid model's global layers), every row, as rows skip layers.
bool labelled(const Calibration& c, int row) {
  const int n_rows = static_cast<int>(c.layers.size());
  return n_rows < c.n_layers || c.layers[row] % 5 == 0 || row == n_rows - 1;
}

// [n_rows, n_fc] mean CA of each FC over the query heads of each calibrated layer; throws when
// there is nothing to draw or a value is not finite.
std::vector<double> layer_means(const Calibration& c) {
  const int n_rows = static_cast<int>(c.layers.size()), n_fc = c.n_fc();
  if (n_rows == 0 || n_fc == 0) {
    fail("calibration heatmap: nothing to draw ({} calibrated layers, {} FCs)", n_rows, n_fc);
  }
  std::vector<double> m(size_t(n_rows) * n_fc, 0.0);
  for (int r = 0; r < n_rows; ++r) {
    for (int f = 0; f < n_fc; ++f) {
      double sum = 0.0;
      for (int h = 0; h < c.n_heads; ++h) sum += c.ca(c.layers[r], h)[f];
      const double v = c.n_heads > 0 ? sum / c.n_heads : 0.0;
      if (!std::isfinite(v)) {
        fail("calibration heatmap: mean CA of layer {} FC {} is {}", c.layers[r], f, v);
      }
      m[size_t(r) * n_fc + f] = v;
    }
  }
  return m;
}

}  // namespace

std::string calibration_heatmap_svg(const Calibration& c) {
  const std::vector<double> mean = layer_means(c);  // [n_rows, n_fc]
  const int cell = 14, left = 90, top = 50, n_fc = c.n_fc();
  const int n_rows = static_cast<int>(c.layers.size());
  const bool partial = n_rows < c.n_layers;
  const int grid_w = n_fc * cell, grid_h = n_rows * cell;
  const int bar_x = left + grid_w + 30, bar_w = 14, bar_h = std::max(grid_h, 120);
  const int width = std::max(bar_x + bar_w + 60, 720);
  const int axis_y = top + grid_h + 16;  // FC tick labels
  const int height = std::max(axis_y + 34 + (partial ? 16 : 0), top + bar_h + 20);
  const std::string name = c.model_name.empty() ? c.arch : c.model_name;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text class=\"title\" x=\"{}\" y=\"20\" font-size=\"13\">{} — mean contextual agreement "
      "per FC (K = {}, {} layout)</text>\n",
      width, height, left, svg_escape(name), c.k, svg_escape(fc_layout_name(c.fc_layout)));
  s += fmt::format(
      "<text class=\"y-label\" x=\"16\" y=\"{0}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 16 {0})\">calibrated layer</text>\n",
      top + grid_h / 2);
  // The grid: one cell per (layer, FC), layers downwards, FC 0 (highest frequency) on the left.
  for (int r = 0; r < n_rows; ++r) {
    const int l = c.layers[r], y = top + r * cell;
    if (labelled(c, r)) {
      s += fmt::
          format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">layer {}</text>\n",
                 left - 6, y + cell - 3, l);
    }
    for (int f = 0; f < n_fc; ++f) {
      const double m = mean[size_t(r) * n_fc + f];
      s += fmt::format(
          "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>layer {} FC {}: {:.3f}</title></rect>\n",
          left + f * cell, y, cell, cell, colour(m), l, f, m);
    }
  }
  for (int f = 0; f < n_fc; f += std::max(1, n_fc / 8)) {
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     left + f * cell + cell / 2, axis_y, f);
  }
  s += fmt::format(
      "<text class=\"x-label\" x=\"{}\" y=\"{}\">frequency chunk (FC; 0 = highest "
      "frequency)</text>\n",
      left, axis_y + 18);
  if (partial) {
    s += fmt::format(
        "<text class=\"note\" x=\"{}\" y=\"{}\">global layers {} of {}; the sliding-window "
        "layers are not calibrated (no policy runs there)</text>\n",
        left, axis_y + 34, layer_list_text(c.layers), c.n_layers);
  }
  // The colour bar: 100 steps, 1.0 at the top, labelled at both ends and the middle. Each step
  // but the lowest reaches 1 px into the one below (drawn before it), so no seams show.
  s += "<g class=\"colour-bar\">\n";
  const double step = bar_h / 100.0;
  for (int i = 0; i < 100; ++i) {
    s += fmt::format("<rect x=\"{}\" y=\"{:.2f}\" width=\"{}\" height=\"{:.2f}\" fill=\"{}\"/>\n",
                     bar_x, top + (99 - i) * step, bar_w, i == 0 ? step : step + 1.0,
                     colour(i / 99.0));
  }
  s += fmt::format("<text class=\"legend\" x=\"{}\" y=\"{}\">mean CA</text>\n", bar_x - 4, top - 8);
  for (const double v : {1.0, 0.5, 0.0}) {
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\">{:.1f}</text>\n",
                     bar_x + bar_w + 4, top + (1.0 - v) * bar_h + 4, v);
  }
  s += "</g>\n</svg>\n";
  return s;
}

}  // namespace fasa
