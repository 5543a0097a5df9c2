// A small SVG line chart: score against budget (or bytes), one line per series, log-2 x axis,
// optional error bars, and optional horizontal reference lines (e.g. full attention, which has
// no budget).
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

// The SVG document. Throws fasa::Error when a series has mismatched sizes or non-positive x.
std::string line_plot_svg(const LinePlot& p);

}  // namespace fasa
