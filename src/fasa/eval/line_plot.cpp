#include "fasa/eval/line_plot.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "fasa/core/error.h"
#include "fasa/eval/plot_layout.h"
#include "fasa/io/svg.h"

namespace fasa {

namespace {

// Series colours (Okabe-Ito without black and yellow, then a few more), cycled; black and greys
// are the references' own, so a reference never looks like a series.
const char* series_colour(size_t i) {
  static const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                   "#E69F00", "#56B4E9", "#8C564B", "#7F7F7F",
                                   "#BCBD22", "#17BECF", "#882255", "#44AA99"};
  return kColours[i % (sizeof(kColours) / sizeof(kColours[0]))];
}

const char* reference_colour(size_t i) {
  static const char* kColours[] = {"#000000", "#555555", "#999999"};
  return kColours[i % (sizeof(kColours) / sizeof(kColours[0]))];
}

// Font sizes (px) of the picture's texts; the SVG's own is kFont.
constexpr double kFont = 12, kTitleFont = 15, kPointFont = 10, kRefFont = 11, kNoteFont = 11;
constexpr double kPad = 0.08;  // each axis's padding, a share of the span it covers
// The marks' reach (px) from their centre: a series' point (r 3), a reference's ring (r 5 and
// half its stroke).
constexpr double kPointR = 3.5, kRingR = 6.0;

// 1536 -> "1.5 KiB": bytes in the largest unit they reach.
std::string bytes_text(double x) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (x >= 1024.0 && u < 4) x /= 1024.0, ++u;
  return fmt::format("{:.4g} {}", x, kUnits[u]);
}

// 1048576 -> "1048576", 0.125 -> "0.125".
std::string number_text(double x) {
  return x == std::round(x) && x < 1e15 ? fmt::format("{:.0f}", x) : fmt::format("{:.4g}", x);
}

void check_series(const PlotSeries& s) {
  if (s.x.empty()) fail("plot series '{}': no points", s.name);
  if (s.x.size() != s.y.size())
    fail("plot series '{}': {} x values, {} y values", s.name, s.x.size(), s.y.size());
  if (!s.err.empty() && s.err.size() != s.y.size())
    fail("plot series '{}': {} error bars, {} y values", s.name, s.err.size(), s.y.size());
  if (!s.labels.empty() && s.labels.size() != s.y.size())
    fail("plot series '{}': {} point labels, {} y values", s.name, s.labels.size(), s.y.size());
  for (size_t i = 0; i < s.x.size(); ++i) {
    if (!(s.x[i] > 0.0) || !std::isfinite(s.x[i]))
      fail("plot series '{}': x must be > 0 and finite (log scale), got {}", s.name, s.x[i]);
    if (!std::isfinite(s.y[i])) fail("plot series '{}': y at x = {} is {}", s.name, s.x[i], s.y[i]);
    if (!s.err.empty() && !(s.err[i] >= 0.0 && std::isfinite(s.err[i])))
      fail("plot series '{}': error bar at x = {} is {}", s.name, s.x[i], s.err[i]);
  }
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
    if (!(r.x >= 0.0 && std::isfinite(r.x)) || !(r.err >= 0.0 && std::isfinite(r.err)))
      fail("plot '{}': reference '{}' has x = {}, error bar {}", p.title, r.name, r.x, r.err);
  }
  for (const auto& s : p.series) check_series(s);
}

// The picture's geometry: the plot area in pixels, the padded data ranges and the data ->
// pixel maps (x on a log2 scale), the ticks, and where the centred texts go.
struct Frame {
  double W = 0.0, H = 0.0, left = 70.0, top = 40.0, bottom = 60.0, pw = 460.0, ph = 0.0;
  double lx0 = 0.0, lx1 = 1.0;  // padded log2 x range
  double y0 = 0.0, y1 = 1.0;    // padded y range
  double lo = 0.0, hi = 1.0;    // y range before padding: error bars are cut here
  std::vector<double> x_ticks, y_ticks;
  std::vector<std::string> x_tick_text, y_tick_text;
  double title_x = 0.0, x_label_x = 0.0;
  std::string title_anchor, x_label_anchor;
  double sx(double x) const { return left + (std::log2(x) - lx0) / (lx1 - lx0) * pw; }
  double sy(double y) const { return top + (1.0 - (std::clamp(y, y0, y1) - y0) / (y1 - y0)) * ph; }
  PlotBox area() const { return {left + 1.0, top + 1.0, left + pw - 1.0, top + ph - 1.0}; }
};

// The y range: [y_min, y_max] and every value, padded; ticks at nice steps.
void y_axis(const LinePlot& p, Frame& f) {
  f.lo = p.y_min;
  f.hi = p.y_max;
  for (const auto& s : p.series) {
    for (double y : s.y) f.lo = std::min(f.lo, y), f.hi = std::max(f.hi, y);
  }
  for (const auto& r : p.references) f.lo = std::min(f.lo, r.y), f.hi = std::max(f.hi, r.y);
  if (!(f.hi > f.lo)) f.hi = f.lo + 1.0;
  const double pad = kPad * (f.hi - f.lo);
  f.y0 = f.lo - pad;
  f.y1 = f.hi + pad;
  int decimals = 2;
  f.y_ticks = nice_ticks(f.lo, f.hi, 5, 0.9 * pad, 2, decimals);
  for (double y : f.y_ticks) f.y_tick_text.push_back(fmt::format("{:.{}f}", y, decimals));
}

// The x range (log2, padded) over every point; ticks at powers of two (at most ~9), or at the
// points' own x when fewer than two powers of two fall inside.
void x_axis(const LinePlot& p, Frame& f) {
  std::vector<double> xs;
  for (const auto& s : p.series) xs.insert(xs.end(), s.x.begin(), s.x.end());
  for (const auto& r : p.references) {
    if (r.x > 0.0) xs.push_back(r.x);
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  double l0 = 0.0, l1 = 1.0;
  if (!xs.empty()) l0 = std::log2(xs.front()), l1 = std::log2(xs.back());
  if (!(l1 > l0)) l0 -= 1.0, l1 += 1.0;
  const double pad = kPad * (l1 - l0);
  f.lx0 = l0 - pad;
  f.lx1 = l1 + pad;
  double step = 1.0;  // octaves: 1, 2, 5, 10, 20, ... so that 1 KiB, 1 MiB, ... stay ticked
  for (int i = 0; (f.lx1 - f.lx0) / step > 9.0; ++i) step *= i % 3 == 1 ? 2.5 : 2.0;
  for (double e = std::ceil(f.lx0 / step) * step; e <= f.lx1; e += step) {
    f.x_ticks.push_back(std::exp2(e));
  }
  if (f.x_ticks.size() < 2) {
    const size_t every = (xs.size() + 7) / 8;
    f.x_ticks.clear();
    for (size_t i = 0; i < xs.size(); i += std::max<size_t>(every, 1)) f.x_ticks.push_back(xs[i]);
  }
  for (double x : f.x_ticks) {
    f.x_tick_text.push_back(p.x_bytes ? bytes_text(x) : number_text(x));
  }
}

// A text centred on `centre` when it fits inside the picture, else from the left margin; the
// picture widens to hold it.
void centre_text(double centre, double width, Frame& f, double& x, std::string& anchor) {
  const double margin = 8.0;
  if (centre - width / 2 >= margin) {
    x = centre, anchor = "middle";
    f.W = std::max(f.W, centre + width / 2 + margin);
  } else {
    x = margin, anchor = "start";
    f.W = std::max(f.W, margin + width + margin);
  }
}

Frame frame_of(const LinePlot& p) {
  Frame f;
  y_axis(p, f);
  x_axis(p, f);
  for (const auto& t : f.y_tick_text) f.left = std::max(f.left, 42.0 + svg_text_width(t, kFont));
  double right = 190.0;  // the legend: a 24 px line, a gap, its text
  for (const auto& r : p.references) right = std::max(right, 56.0 + svg_text_width(r.name, kFont));
  for (const auto& s : p.series) right = std::max(right, 56.0 + svg_text_width(s.name, kFont));
  right = std::max(right, 26.0 + svg_text_width(p.note, kNoteFont));
  f.W = f.left + f.pw + right;
  centre_text(f.left + f.pw / 2, svg_text_width(p.title, kTitleFont), f, f.title_x, f.title_anchor);
  centre_text(f.left + f.pw / 2, svg_text_width(p.x_label, kFont), f, f.x_label_x,
              f.x_label_anchor);
  const int n_legend = static_cast<int>(p.series.size() + p.references.size());
  f.H = std::max(420.0, f.top + f.bottom + 20.0 * n_legend + (p.note.empty() ? 0.0 : 24.0));
  f.ph = f.H - f.top - f.bottom;
  return f;
}

// Title, grid, ticks and their labels, the frame, the axis labels.
void draw_axes(const Frame& f, const LinePlot& p, std::string& s) {
  s += fmt::format(
      "<text class=\"title\" x=\"{:.1f}\" y=\"22\" font-size=\"{}\" text-anchor=\"{}\">{}</text>\n",
      f.title_x, kTitleFont, f.title_anchor, svg_escape(p.title));
  for (size_t i = 0; i < f.y_ticks.size(); ++i) {
    const double y = f.sy(f.y_ticks[i]);
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n",
                     f.left, y, f.left + f.pw, y);
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                     f.left - 6, y + 4, f.y_tick_text[i]);
  }
  for (size_t i = 0; i < f.x_ticks.size(); ++i) {
    const double x = f.sx(f.x_ticks[i]);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>\n", x,
                     f.top, x, f.top + f.ph);
    s +=
        fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                    x, f.top + f.ph + 18, f.x_tick_text[i]);
  }
  s += fmt::format(
      "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
      "stroke=\"#333\"/>\n",
      f.left, f.top, f.pw, f.ph);
  s += fmt::format("<text class=\"x-label\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"{}\">{}</text>\n",
                   f.x_label_x, f.H - 15, f.x_label_anchor, svg_escape(p.x_label));
  s += fmt::format(
      "<text class=\"y-label\" x=\"18\" y=\"{0}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 18 {0})\">{1}</text>\n",
      f.top + f.ph / 2, svg_escape(p.y_label));
}

// A vertical bar from y - err to y + err at x, with short caps, cut at the y range's ends.
void draw_error_bar(const Frame& f, double x, double y, double err, const char* col,
                    std::string& s) {
  const double px = f.sx(x);
  const double lo = f.sy(std::max(y - err, f.lo)), hi = f.sy(std::min(y + err, f.hi));
  s += fmt::format(
      "<path d=\"M{0:.1f},{1:.1f}V{2:.1f}M{3:.1f},{1:.1f}H{4:.1f}M{3:.1f},{2:.1f}H{4:.1f}\" "
      "stroke=\"{5}\" stroke-width=\"1.2\" fill=\"none\"/>\n",
      px, lo, hi, px - 4, px + 4, col);
}

// Each series: its polyline, error bars and points.
void draw_series(const Frame& f, const LinePlot& p, std::string& s) {
  for (size_t k = 0; k < p.series.size(); ++k) {
    const PlotSeries& se = p.series[k];
    const char* col = series_colour(k);
    std::string pts;
    for (size_t i = 0; i < se.x.size(); ++i) {
      pts += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", f.sx(se.x[i]), f.sy(se.y[i]));
    }
    s += fmt::format(
        "<g class=\"series\">\n<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"2.4\"/>\n",
        pts, col);
    for (size_t i = 0; i < se.x.size(); ++i) {
      if (!se.err.empty() && se.err[i] > 0.0)
        draw_error_bar(f, se.x[i], se.y[i], se.err[i], col, s);
      s +=
          fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n",
                      f.sx(se.x[i]), f.sy(se.y[i]), col);
    }
    s += "</g>\n";
  }
}

// The references, over the series: a dashed line across the plot, and a ring on its own point
// (with its error bar) where it has one.
void draw_references(const Frame& f, const LinePlot& p, std::string& s) {
  for (size_t k = 0; k < p.references.size(); ++k) {
    const PlotReference& r = p.references[k];
    const char* col = reference_colour(k);
    s += fmt::format(
        "<line class=\"reference\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" "
        "stroke=\"{}\" stroke-width=\"1.6\" stroke-dasharray=\"6 4\"/>\n",
        f.left, f.sy(r.y), f.left + f.pw, f.sy(r.y), col);
    if (r.x <= 0.0) continue;
    if (r.err > 0.0) draw_error_bar(f, r.x, r.y, r.err, col, s);
    s += fmt::format(
        "<circle class=\"reference-point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"none\" "
        "stroke=\"{}\" stroke-width=\"1.6\"/>\n",
        f.sx(r.x), f.sy(r.y), col);
  }
}

PlotBox point_box(double px, double py, double r) { return {px - r, py - r, px + r, py + r}; }

// The references' names (beside their point, or at an end of their line) and the points'
// labels, each where it overlaps no mark and no label placed before it, when such a place is.
void draw_labels(const Frame& f, const LinePlot& p, std::string& s) {
  std::vector<PlotBox> taken;
  for (const auto& se : p.series) {
    for (size_t i = 0; i < se.x.size(); ++i)
      taken.push_back(point_box(f.sx(se.x[i]), f.sy(se.y[i]), kPointR));
  }
  for (const auto& r : p.references) {
    if (r.x > 0.0) taken.push_back(point_box(f.sx(r.x), f.sy(r.y), kRingR));
  }
  auto text = [&](const char* cls, double size, const LabelSpot& at, const char* col,
                  const std::string& t) {
    s += fmt::format(
        "<text class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{}\" text-anchor=\"{}\" "
        "fill=\"{}\">{}</text>\n",
        cls, at.x, at.y, size, at.anchor, col, svg_escape(t));
  };
  for (size_t k = 0; k < p.references.size(); ++k) {
    const PlotReference& r = p.references[k];
    const double y = f.sy(r.y), below = y + 4.0 + 0.8 * kRefFont;
    const std::vector<LabelSpot> along = {{f.left + 4, y - 4, "start"},
                                          {f.left + f.pw - 4, y - 4, "end"},
                                          {f.left + 4, below, "start"},
                                          {f.left + f.pw - 4, below, "end"}};
    const auto spots = r.x > 0.0 ? spots_beside(f.sx(r.x), y, kRingR, kRefFont) : along;
    const double w = svg_text_width(r.name, kRefFont);
    text("reference-label", kRefFont, place_label(spots, w, kRefFont, f.area(), taken),
         reference_colour(k), r.name);
  }
  for (size_t k = 0; k < p.series.size(); ++k) {
    const PlotSeries& se = p.series[k];
    for (size_t i = 0; i < se.labels.size(); ++i) {
      const auto spots = spots_beside(f.sx(se.x[i]), f.sy(se.y[i]), kPointR, kPointFont);
      const double w = svg_text_width(se.labels[i], kPointFont);
      text("point-label", kPointFont, place_label(spots, w, kPointFont, f.area(), taken),
           series_colour(k), se.labels[i]);
    }
  }
}

// The legend right of the plot: the references (dashed, ringed where they have a point), the
// series (a line through a point), then the note.
void draw_legend(const Frame& f, const LinePlot& p, std::string& s) {
  const double x0 = f.left + f.pw + 12, x1 = x0 + 24, xm = (x0 + x1) / 2;
  double y = f.top + 10;
  auto entry = [&](const std::string& name, const char* col, const char* extra) {
    s += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", x0,
        y, x1, y, col, extra);
    s += fmt::format("<text class=\"legend\" x=\"{}\" y=\"{}\">{}</text>\n", x1 + 6, y + 4,
                     svg_escape(name));
  };
  for (size_t k = 0; k < p.references.size(); ++k) {
    const char* col = reference_colour(k);
    entry(p.references[k].name, col, " stroke-dasharray=\"6 4\"");
    if (p.references[k].x > 0.0) {
      s += fmt::format(
          "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"white\" stroke=\"{}\" "
          "stroke-width=\"1.6\"/>\n",
          xm, y, col);
    }
    y += 20;
  }
  for (size_t k = 0; k < p.series.size(); ++k) {
    entry(p.series[k].name, series_colour(k), "");
    s +=
        fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>\n", xm, y, series_colour(k));
    y += 20;
  }
  if (!p.note.empty()) {
    s += fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\" font-size=\"{}\">{}</text>\n", x0,
                     y + 8, kNoteFont, svg_escape(p.note));
  }
}

}  // namespace

std::string line_plot_svg(const LinePlot& p) {
  check_plot(p);
  const Frame f = frame_of(p);
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\" font-size=\"{2}\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      std::ceil(f.W), std::ceil(f.H), kFont);
  draw_axes(f, p, s);
  draw_series(f, p, s);
  draw_references(f, p, s);
  draw_labels(f, p, s);
  draw_legend(f, p, s);
  s += "</svg>\n";
  return s;
}

}  // namespace fasa
