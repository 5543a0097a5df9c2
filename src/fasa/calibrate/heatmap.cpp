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

// Where everything goes (px): the title (one line, or the model's name over a subtitle when one
// line would be wider than the picture), the grid of cells from (left, top), the colour bar
// right of it, the FC ticks, axis label and note below it; a picture wide and high enough for
// every text (a long model name widens it; a short grid still holds the rotated y-axis label).
struct HeatmapLayout {
  static constexpr double kCell = 14, kFont = 11, kTitleFont = 13, kBarW = 14, kMargin = 12;
  std::string title, subtitle;  // subtitle: empty when the title is one line
  double left = 90, top = 50, grid_w = 0, grid_h = 0, bar_x = 0, bar_h = 0, axis_y = 0;
  double y_label_y = 0, width = 0, height = 0;
};

std::string x_label_text() { return "frequency chunk (FC; 0 = highest frequency)"; }
std::string y_label_text() { return "calibrated layer"; }

std::string note_text(const Calibration& c) {
  return fmt::format(
      "global layers {} of {}; the sliding-window layers are not calibrated (no policy runs "
      "there)",
      layer_list_text(c.layers), c.n_layers);
}

// The picture's width before the title: the grid, the colour bar and its labels, the x-axis
// label and (a hybrid model's) note.
double body_width(const Calibration& c, const HeatmapLayout& g) {
  using L = HeatmapLayout;
  const bool partial = static_cast<int>(c.layers.size()) < c.n_layers;
  return std::max({720.0, g.bar_x + L::kBarW + 4 + svg_text_width("1.0", L::kFont) + L::kMargin,
                   g.bar_x - 4 + svg_text_width("mean CA", L::kFont) + L::kMargin,
                   g.left + svg_text_width(x_label_text(), L::kFont) + L::kMargin,
                   partial ? g.left + svg_text_width(note_text(c), L::kFont) + L::kMargin : 0.0});
}

// The title on one line when it fits `width`, else the model's name over a subtitle (the grid
// moves down a line); the width grows to hold whichever line is longest.
void lay_out_title(const Calibration& c, double width, HeatmapLayout& g) {
  using L = HeatmapLayout;
  const std::string name = c.model_name.empty() ? c.arch : c.model_name;
  const std::string what = fmt::format("mean contextual agreement per FC (K = {}, {} layout)", c.k,
                                       fc_layout_name(c.fc_layout));
  g.title = name + " — " + what;
  g.width = width;
  const double one_line = g.left + svg_text_width(g.title, L::kTitleFont) + L::kMargin;
  if (one_line <= width) return;
  g.title = name;
  g.subtitle = what;
  g.top += 18;
  g.width = std::max({width, g.left + svg_text_width(name, L::kTitleFont) + L::kMargin,
                      g.left + svg_text_width(what, L::kFont) + L::kMargin});
}

HeatmapLayout layout_of(const Calibration& c) {
  using L = HeatmapLayout;
  const int n_rows = static_cast<int>(c.layers.size());
  const bool partial = n_rows < c.n_layers;
  L g;
  for (int r = 0; r < n_rows; ++r) {
    const double w = svg_text_width(fmt::format("layer {}", c.layers[r]), L::kFont);
    g.left = std::max(g.left, std::ceil(30 + w + 6));  // the rotated y-axis label, then the tick
  }
  g.grid_w = c.n_fc() * L::kCell;
  g.grid_h = n_rows * L::kCell;
  g.bar_x = g.left + g.grid_w + 30;
  g.bar_h = std::max(g.grid_h, 120.0);
  lay_out_title(c, body_width(c, g), g);
  g.axis_y = g.top + g.grid_h + 16;
  const double y_label_w = svg_text_width(y_label_text(), L::kFont);
  g.y_label_y = std::max(g.top + g.grid_h / 2, g.top + y_label_w / 2);
  g.height = std::max({g.axis_y + 34 + (partial ? 16 : 0), g.top + g.bar_h + 20,
                       g.y_label_y + y_label_w / 2 + L::kMargin});
  return g;
}

// The grid: one cell per (layer, FC), layers downwards, FC 0 (highest frequency) on the left;
// the layer ticks left of it and the FC ticks under it.
void draw_grid(const Calibration& c, const std::vector<double>& mean, const HeatmapLayout& g,
               std::string& s) {
  const double cell = HeatmapLayout::kCell, top = g.top;
  const int n_rows = static_cast<int>(c.layers.size()), n_fc = c.n_fc();
  for (int r = 0; r < n_rows; ++r) {
    const int l = c.layers[r];
    const double y = top + r * cell;
    if (labelled(c, r)) {
      s += fmt::
          format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">layer {}</text>\n",
                 g.left - 6, y + cell - 3, l);
    }
    for (int f = 0; f < n_fc; ++f) {
      const double m = mean[size_t(r) * n_fc + f];
      s += fmt::format(
          "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>layer {} FC {}: {:.3f}</title></rect>\n",
          g.left + f * cell, y, cell, cell, colour(m), l, f, m);
    }
  }
  for (int f = 0; f < n_fc; f += std::max(1, n_fc / 8)) {
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     g.left + f * cell + cell / 2, g.axis_y, f);
  }
}

// The colour bar: 100 steps, 1.0 at the top, labelled at both ends and the middle. Each step
// but the lowest reaches 1 px into the one below (drawn before it), so no seams show.
void draw_colour_bar(const HeatmapLayout& g, std::string& s) {
  const double top = g.top, bar_w = HeatmapLayout::kBarW;
  s += "<g class=\"colour-bar\">\n";
  const double step = g.bar_h / 100.0;
  for (int i = 0; i < 100; ++i) {
    s += fmt::format("<rect x=\"{}\" y=\"{:.2f}\" width=\"{}\" height=\"{:.2f}\" fill=\"{}\"/>\n",
                     g.bar_x, top + (99 - i) * step, bar_w, i == 0 ? step : step + 1.0,
                     colour(i / 99.0));
  }
  s += fmt::format("<text class=\"legend\" x=\"{}\" y=\"{}\">mean CA</text>\n", g.bar_x - 4,
                   top - 8);
  for (const double v : {1.0, 0.5, 0.0}) {
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\">{:.1f}</text>\n",
                     g.bar_x + bar_w + 4, top + (1.0 - v) * g.bar_h + 4, v);
  }
  s += "</g>\n";
}

}  // namespace

std::string calibration_heatmap_svg(const Calibration& c) {
  using L = HeatmapLayout;
  const std::vector<double> mean = layer_means(c);  // [n_rows, n_fc]
  const L g = layout_of(c);
  const bool partial = static_cast<int>(c.layers.size()) < c.n_layers;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\" font-size=\"{2}\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text class=\"title\" x=\"{3}\" y=\"20\" font-size=\"{4}\">{5}</text>\n",
      std::ceil(g.width), std::ceil(g.height), L::kFont, g.left, L::kTitleFont,
      svg_escape(g.title));
  if (!g.subtitle.empty()) {
    s += fmt::format("<text class=\"subtitle\" x=\"{}\" y=\"38\">{}</text>\n", g.left,
                     svg_escape(g.subtitle));
  }
  s += fmt::format(
      "<text class=\"y-label\" x=\"16\" y=\"{0}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 16 {0})\">{1}</text>\n",
      g.y_label_y, y_label_text());
  draw_grid(c, mean, g, s);
  s += fmt::format("<text class=\"x-label\" x=\"{}\" y=\"{}\">{}</text>\n", g.left, g.axis_y + 18,
                   x_label_text());
  if (partial) {
    s += fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\">{}</text>\n", g.left, g.axis_y + 34,
                     svg_escape(note_text(c)));
  }
  draw_colour_bar(g, s);
  s += "</svg>\n";
  return s;
}

}  // namespace fasa
