// A small SVG line chart: score against budget (or bytes), one line per series, log-2 x axis,
// optional error bars and point labels, and optional horizontal reference lines (e.g. full
// attention, which has no budget). Everything written is text: the title, the axis labels, the
// tick labels, the point and reference labels and the legend are <text> elements (classes
// title, x-label, y-label, tick, point-label, reference-label, legend, note); each series is a
// <g class="series"> holding its polyline and one <circle class="point"> per point; each
// reference a <line class="reference">, dashed, drawn after every series so that a series equal
// to it never hides it. Both axes are padded: every point lies inside the frame, off its edges.
#pragma once

#include <string>
#include <vector>

namespace fasa {

struct PlotSeries {
  std::string name;
  std::vector<double> x;    // [n] > 0, increasing
  std::vector<double> y;    // [n]
  std::vector<double> err;  // [n] error bar half-widths (drawn y - err .. y + err), or empty
  std::vector<std::string> labels;  // [n] a text beside each point (e.g. its budget), or empty
};

struct PlotReference {
  std::string name;
  double y = 0.0;
  // x > 0: the reference's own point on its line (e.g. full's KV bytes), marked with a ring and
  // an error bar of half-width err; x = 0: a line only.
  double x = 0.0, err = 0.0;
};

struct LinePlot {
  std::string title, x_label, y_label;
  // The y axis covers [y_min, y_max] and every value, padded by 8 % of that span on each side;
  // error bars are cut at its ends (a score's 95 % CI at 0 and 1).
  double y_min = 0.0, y_max = 1.0;
  bool x_bytes = false;  // x ticks written as bytes (KiB, MiB, ...) rather than numbers
  std::vector<PlotSeries> series;
  std::vector<PlotReference> references;
  std::string note;  // a line under the legend (e.g. what the point labels say), or empty
};

// The SVG document, sized so that every text fits (long titles and legend names widen it).
// Throws fasa::Error when there is nothing to draw (no series, no reference), a series has no
// points or mismatched sizes, an x is not > 0, or a value is not finite.
std::string line_plot_svg(const LinePlot& p);

}  // namespace fasa
