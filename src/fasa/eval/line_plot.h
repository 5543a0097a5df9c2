// A small SVG line chart: score against budget (or bytes), one line per series, log-2 x axis,
// optional error bars, and optional horizontal reference lines (e.g. full attention, which has
// no budget). Everything written is text: the title, the axis labels, the tick labels and the
// legend are <text> elements (classes title, x-label, y-label, tick, legend); each series is a
// <g class="series"> holding its polyline and one <circle class="point"> per point.
#pragma once

#include <string>
#include <vector>

namespace fasa {

struct PlotSeries {
  std::string name;
  std::vector<double> x;    // [n] > 0, increasing
  std::vector<double> y;    // [n]
  std::vector<double> err;  // [n] error bar half-widths (drawn y - err .. y + err), or empty
};

struct PlotReference {
  std::string name;
  double y = 0.0;
};

struct LinePlot {
  std::string title, x_label, y_label;
  double y_min = 0.0, y_max = 1.0;
  bool x_bytes = false;  // x ticks written as bytes (KiB, MiB, ...) rather than numbers
  std::vector<PlotSeries> series;
  std::vector<PlotReference> references;
};

// The SVG document. Throws fasa::Error when there is nothing to draw (no series, no reference),
// a series has no points or mismatched sizes, an x is not > 0, or a value is not finite.
std::string line_plot_svg(const LinePlot& p);

}  // namespace fasa
