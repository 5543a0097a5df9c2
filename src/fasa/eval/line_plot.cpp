#include "fasa/eval/line_plot.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "fasa/core/error.h"
#include "fasa/io/svg.h"

namespace fasa {

namespace {

// Distinct colors (Okabe-Ito, then a few more), cycled.
const char* color(size_t i) {
  static const char* kColors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
                                  "#000000", "#F0E442", "#8C564B", "#7F7F7F", "#BCBD22", "#17BECF"};
  return kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
}

// 1536 -> "1.5 KiB": a power of two of bytes in the largest unit it reaches.
std::string bytes_text(double x) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (x >= 1024.0 && u < 4) x /= 1024.0, ++u;
  return fmt::format("{:g} {}", x, kUnits[u]);
}

// Refuses what cannot be drawn, naming the series and the point: nothing at all, a series
// without points, mismatched sizes, x <= 0 (log scale), and non-finite values.
void check_plot(const LinePlot& p) {
  if (p.series.empty() && p.references.empty())
    fail("plot '{}': nothing to draw (no series and no reference lines)", p.title);
  if (!std::isfinite(p.y_min) || !std::isfinite(p.y_max))
    fail("plot '{}': y range [{}, {}] is not finite", p.title, p.y_min, p.y_max);
  for (const auto& r : p.references) {
    if (!std::isfinite(r.y)) fail("plot '{}': reference '{}' is at y = {}", p.title, r.name, r.y);
  }
  for (const auto& s : p.series) {
    if (s.x.empty()) fail("plot series '{}': no points", s.name);
    if (s.x.size() != s.y.size())
      fail("plot series '{}': {} x values, {} y values", s.name, s.x.size(), s.y.size());
    if (!s.err.empty() && s.err.size() != s.y.size())
      fail("plot series '{}': {} error bars, {} y values", s.name, s.err.size(), s.y.size());
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!(s.x[i] > 0.0) || !std::isfinite(s.x[i]))
        fail("plot series '{}': x must be > 0 and finite (log scale), got {}", s.name, s.x[i]);
      if (!std::isfinite(s.y[i]))
        fail("plot series '{}': y at x = {} is {}", s.name, s.x[i], s.y[i]);
      if (!s.err.empty() && !(s.err[i] >= 0.0 && std::isfinite(s.err[i])))
        fail("plot series '{}': error bar at x = {} is {}", s.name, s.x[i], s.err[i]);
    }
  }
}

// The x range over every series (log scale: x > 0, checked by check_plot).
std::pair<double, double> x_range(const LinePlot& p) {
  double x_lo = INFINITY, x_hi = -INFINITY;
  for (const auto& s : p.series) {
    for (double x : s.x) {
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
    }
  }
  if (!(x_lo < INFINITY)) x_lo = 1.0, x_hi = 2.0;
  if (x_hi <= x_lo) x_hi = x_lo * 2.0;
  return {x_lo, x_hi};
}

// The plot area in pixels and the data -> pixel maps (x on a log2 scale, y clamped).
struct Frame {
  static constexpr int W = 720, left = 70, right = 190, top = 40, bottom = 60;
  int H = 0;
  double pw = 0.0, ph = 0.0;  // plot area width, height
  double lx0 = 0.0, lx1 = 0.0, y0 = 0.0, y1 = 0.0;
  double sx(double x) const { return left + (std::log2(x) - lx0) / (lx1 - lx0) * pw; }
  double sy(double y) const { return top + (1.0 - (std::clamp(y, y0, y1) - y0) / (y1 - y0)) * ph; }
};

Frame frame_of(const LinePlot& p) {
  const auto [x_lo, x_hi] = x_range(p);
  Frame f;
  f.lx0 = std::log2(x_lo);
  f.lx1 = std::log2(x_hi);
  f.y0 = p.y_min;
  f.y1 = p.y_max > p.y_min ? p.y_max : p.y_min + 1.0;
  const int n_legend = static_cast<int>(p.series.size() + p.references.size());
  f.H = std::max(420, Frame::top + Frame::bottom + 20 * n_legend);
  f.pw = Frame::W - Frame::left - Frame::right;
  f.ph = f.H - Frame::top - Frame::bottom;
  return f;
}

// Title, axes, grid and ticks (y in fifths, x at powers of two), labels.
void draw_axes(const Frame& f, const LinePlot& p, std::string& s) {
  const int left = Frame::left, top = Frame::top;
  s += fmt::format(
      "<text class=\"title\" x=\"{}\" y=\"22\" font-size=\"15\" "
      "text-anchor=\"middle\">{}</text>\n",
      left + f.pw / 2, svg_escape(p.title));
  for (int i = 0; i <= 5; ++i) {
    const double y = f.y0 + (f.y1 - f.y0) * i / 5.0;
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n",
                     left, f.sy(y), left + f.pw, f.sy(y));
    s += fmt::
        format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.2f}</text>\n",
               left - 6, f.sy(y) + 4, y);
  }
  const double step = std::max(1.0, std::ceil((f.lx1 - f.lx0) / 10.0));  // at most ~10 ticks
  for (double e = std::ceil(f.lx0); e <= f.lx1 + 1e-9; e += step) {
    const double x = std::exp2(e);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>\n",
                     f.sx(x), top, f.sx(x), top + f.ph);
    s +=
        fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                    f.sx(x), top + f.ph + 18, p.x_bytes ? bytes_text(x) : fmt::format("{:g}", x));
  }
  s += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
      "stroke=\"#333\"/>\n",
      left, top, f.pw, f.ph);
  s += fmt::format("<text class=\"x-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   left + f.pw / 2, f.H - 15, svg_escape(p.x_label));
  s += fmt::format(
      "<text class=\"y-label\" x=\"18\" y=\"{}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 18 {})\">"
      "{}</text>\n",
      top + f.ph / 2, top + f.ph / 2, svg_escape(p.y_label));
}

// A vertical bar from y - err to y + err at x, with short caps.
void draw_error_bar(const Frame& f, double x, double y, double err, const char* col,
                    std::string& s) {
  const double px = f.sx(x), lo = f.sy(y - err), hi = f.sy(y + err);
  s += fmt::format(
      "<path d=\"M{0:.1f},{1:.1f}V{2:.1f}M{3:.1f},{1:.1f}H{4:.1f}M{3:.1f},{2:.1f}H{4:.1f}\" "
      "stroke=\"{5}\" stroke-width=\"1.2\" fill=\"none\"/>\n",
      px, lo, hi, px - 4, px + 4, col);
}

// Reference lines (dashed), then the series (polyline and points), each with a legend entry.
void draw_lines(const Frame& f, const LinePlot& p, std::string& s) {
  const int left = Frame::left;
  size_t c = 0;
  int legend_y = Frame::top + 10;
  auto legend = [&](const std::string& name, const char* col, bool dashed) {
    s += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
        "stroke-width=\"2\"{}/>\n",
        left + f.pw + 12, legend_y, left + f.pw + 36, legend_y, col,
        dashed ? " stroke-dasharray=\"6 4\"" : "");
    s += fmt::format("<text class=\"legend\" x=\"{}\" y=\"{}\">{}</text>\n", left + f.pw + 42,
                     legend_y + 4, svg_escape(name));
    legend_y += 20;
  };
  for (const auto& r : p.references) {
    const char* col = color(c++);
    s += fmt::format(
        "<line class=\"reference\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" "
        "stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n",
        left, f.sy(r.y), left + f.pw, f.sy(r.y), col);
    legend(r.name, col, true);
  }
  for (const auto& se : p.series) {
    const char* col = color(c++);
    std::string pts;
    for (size_t i = 0; i < se.x.size(); ++i) {
      pts += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", f.sx(se.x[i]), f.sy(se.y[i]));
    }
    s += fmt::format(
        "<g class=\"series\">\n<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"2\"/>\n",
        pts, col);
    for (size_t i = 0; i < se.x.size(); ++i) {
      s +=
          fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n",
                      f.sx(se.x[i]), f.sy(se.y[i]), col);
      if (!se.err.empty() && se.err[i] > 0.0)
        draw_error_bar(f, se.x[i], se.y[i], se.err[i], col, s);
    }
    s += "</g>\n";
    legend(se.name, col, false);
  }
}

}  // namespace

std::string line_plot_svg(const LinePlot& p) {
  check_plot(p);
  const Frame f = frame_of(p);
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n",
      Frame::W, f.H);
  draw_axes(f, p, s);
  draw_lines(f, p, s);
  s += "</svg>\n";
  return s;
}

}  // namespace fasa
