#include "fasa/calibrate/heatmap.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "fasa/io/png.h"

namespace fasa {

namespace {

using Rgb = std::array<uint8_t, 3>;

// A perceptual-ish ramp from pale yellow (0) through teal to dark blue (1).
Rgb colour_rgb(double v) {
  v = std::clamp(v, 0.0, 1.0);
  const double stops[3][3] = {{255, 250, 205}, {44, 162, 149}, {8, 29, 88}};
  const double t = v < 0.5 ? v * 2.0 : (v - 0.5) * 2.0;
  const double* a = stops[v < 0.5 ? 0 : 1];
  const double* b = stops[v < 0.5 ? 1 : 2];
  auto mix = [&](int i) { return static_cast<uint8_t>(std::lround(a[i] + (b[i] - a[i]) * t)); };
  return {mix(0), mix(1), mix(2)};
}

std::string colour(double v) {
  const Rgb c = colour_rgb(v);
  return fmt::format("rgb({},{},{})", c[0], c[1], c[2]);
}

// A row's layer number is labelled when every layer is covered: every 5 layers and the last;
// when only some are (a hybrid model's global layers), every row, as rows skip layers.
bool labelled(const Calibration& c, int row) {
  const int n_rows = static_cast<int>(c.layers.size());
  return n_rows < c.n_layers || c.layers[row] % 5 == 0 || row == n_rows - 1;
}

// Mean CA of FC `f` over the query heads of layer `l`.
double layer_mean(const Calibration& c, int l, int f) {
  double m = 0.0;
  for (int h = 0; h < c.n_heads; ++h) m += c.ca(l, h)[f];
  return c.n_heads > 0 ? m / c.n_heads : 0.0;
}

// A 5x7 pixel font for the digits and '.': seven rows per glyph, bit 4 = leftmost column.
constexpr int kGlyphW = 5, kGlyphH = 7, kAdvance = 6;
constexpr uint8_t kDigits[10][kGlyphH] = {
    {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E},  // 0
    {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E},  // 1
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F},  // 2
    {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E},  // 3
    {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02},  // 4
    {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E},  // 5
    {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E},  // 6
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},  // 7
    {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E},  // 8
    {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C},  // 9
};
constexpr uint8_t kDot[kGlyphH] = {0, 0, 0, 0, 0, 0x0C, 0x0C};

// An RGB raster with clipped drawing.
struct Canvas {
  int w, h;
  std::vector<uint8_t> px;
  Canvas(int width, int height, Rgb bg) : w(width), h(height), px(size_t(width) * height * 3) {
    for (size_t i = 0; i < px.size(); i += 3) std::copy(bg.begin(), bg.end(), px.begin() + i);
  }
  void set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= w || y >= h) return;
    std::copy(c.begin(), c.end(), px.begin() + (size_t(y) * w + x) * 3);
  }
  void fill(int x, int y, int rw, int rh, Rgb c) {
    for (int j = y; j < y + rh; ++j) {
      for (int i = x; i < x + rw; ++i) set(i, j, c);
    }
  }
  void frame(int x, int y, int rw, int rh, Rgb c) {  // a 1-px outline just outside the box
    fill(x - 1, y - 1, rw + 2, 1, c);
    fill(x - 1, y + rh, rw + 2, 1, c);
    fill(x - 1, y, 1, rh, c);
    fill(x + rw, y, 1, rh, c);
  }
  static int text_width(const std::string& s) {
    return s.empty() ? 0 : static_cast<int>(s.size()) * kAdvance - (kAdvance - kGlyphW);
  }
  // Draws digits and dots with the top-left corner of the first glyph at (x, y).
  void text(int x, int y, const std::string& s, Rgb c) {
    for (char ch : s) {
      const uint8_t* g = ch == '.' ? kDot : (ch >= '0' && ch <= '9') ? kDigits[ch - '0'] : nullptr;
      if (g != nullptr) {
        for (int r = 0; r < kGlyphH; ++r) {
          for (int col = 0; col < kGlyphW; ++col) {
            if (g[r] & (0x10 >> col)) set(x + col, y + r, c);
          }
        }
      }
      x += kAdvance;
    }
  }
};

}  // namespace

std::string calibration_heatmap_svg(const Calibration& c) {
  const int cell = 14, left = 70, top = 50, n_fc = c.n_fc();
  const int n_rows = static_cast<int>(c.layers.size());
  const bool partial = n_rows < c.n_layers;
  const int width = std::max(left + n_fc * cell + 90, 720);
  const int height = top + n_rows * cell + 50 + (partial ? 16 : 0);
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"20\" font-size=\"13\">{} — mean contextual agreement per FC "
      "(K = {}, {} layout)</text>\n",
      width, height, left, c.model_name.empty() ? c.arch : c.model_name, c.k,
      fc_layout_name(c.fc_layout));
  for (int r = 0; r < n_rows; ++r) {
    const int l = c.layers[r], y = top + r * cell;
    if (labelled(c, r)) {
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">layer {}</text>\n", left - 6,
                       y + cell - 3, l);
    }
    for (int f = 0; f < n_fc; ++f) {
      const double m = layer_mean(c, l, f);
      s += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>layer {} FC {}: "
          "{:.3f}</title></rect>\n",
          left + f * cell, y, cell, cell, colour(m), l, f, m);
    }
  }
  const int axis_y = top + n_rows * cell + 16;
  for (int f = 0; f < n_fc; f += std::max(1, n_fc / 8)) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     left + f * cell + cell / 2, axis_y, f);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\">frequency chunk (0 = highest frequency)</text>\n", left,
                   axis_y + 18);
  if (partial) {
    s += fmt::format(
        "<text x=\"{}\" y=\"{}\">global layers {} of {}; the sliding-window layers "
        "are not calibrated (no policy runs there)</text>\n",
        left, axis_y + 34, layer_list_text(c.layers), c.n_layers);
  }
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

std::string calibration_heatmap_png(const Calibration& c) {
  const Rgb white{255, 255, 255}, ink{40, 40, 40}, rule{150, 150, 150};
  // One row per covered layer (a hybrid model's global layers only), labelled with its number.
  const int cell_w = 14, cell_h = 10, n_fc = c.n_fc(), n_rows = static_cast<int>(c.layers.size());
  const int label_w = Canvas::text_width(std::to_string(c.layers.empty() ? 0 : c.layers.back()));
  const int left = 10 + label_w + 6, top = 10 + kGlyphH + 6;
  const int grid_w = n_fc * cell_w, grid_h = n_rows * cell_h;
  const int bar_x = left + grid_w + 16, bar_w = 14, bar_h = std::max(grid_h, 100);
  const int width = bar_x + bar_w + 5 + Canvas::text_width("0.0") + 10;
  const int height = top + std::max(grid_h, bar_h) + 12;
  Canvas cv(width, height, white);

  // The grid: one cell per (layer, FC), layers downwards, FC 0 (highest frequency) on the left.
  for (int l = 0; l < n_rows; ++l) {
    for (int f = 0; f < n_fc; ++f) {
      cv.fill(left + f * cell_w, top + l * cell_h, cell_w, cell_h,
              colour_rgb(layer_mean(c, c.layers[l], f)));
    }
  }
  if (grid_w > 0 && grid_h > 0) cv.frame(left, top, grid_w, grid_h, rule);
  // Layer numbers (every 5 layers and the last, or every row of a partial cover), right-aligned,
  // with a tick.
  for (int l = 0; l < n_rows; ++l) {
    if (!labelled(c, l)) continue;
    const std::string t = std::to_string(c.layers[l]);
    const int y = top + l * cell_h;
    cv.text(left - 5 - Canvas::text_width(t), y + (cell_h - kGlyphH) / 2, t, ink);
    cv.fill(left - 3, y + cell_h / 2, 2, 1, rule);
  }
  // FC numbers every 4 FCs, centred over their column, with a tick.
  for (int f = 0; f < n_fc; f += 4) {
    const std::string t = std::to_string(f);
    const int x = left + f * cell_w;
    cv.text(x + (cell_w - Canvas::text_width(t)) / 2, top - 5 - kGlyphH, t, ink);
    cv.fill(x + cell_w / 2, top - 3, 1, 2, rule);
  }
  // The colour bar: 1.0 at the top, 0.0 at the bottom, labelled at both ends and the middle.
  for (int y = 0; y < bar_h; ++y) {
    cv.fill(bar_x, top + y, bar_w, 1, colour_rgb(1.0 - double(y) / std::max(bar_h - 1, 1)));
  }
  cv.frame(bar_x, top, bar_w, bar_h, rule);
  const int tx = bar_x + bar_w + 5;
  cv.text(tx, top, "1.0", ink);
  cv.text(tx, top + (bar_h - kGlyphH) / 2, "0.5", ink);
  cv.text(tx, top + bar_h - kGlyphH, "0.0", ink);
  return encode_png_rgb(width, height, cv.px);
}

}  // namespace fasa
