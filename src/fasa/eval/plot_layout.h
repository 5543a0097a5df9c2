// Layout rules of eval's line plots (line_plot.h): "nice" axis ticks, and text boxes placed
// beside points so that they overlap neither each other nor the marks already drawn.
#pragma once

#include <string>
#include <vector>

namespace fasa {

// A rectangle in picture pixels (y downwards): [x0, x1] x [y0, y1].
struct PlotBox {
  double x0 = 0.0, y0 = 0.0, x1 = 0.0, y1 = 0.0;
};

// The area two boxes share (0 when they do not overlap).
double overlap_area(const PlotBox& a, const PlotBox& b);

// Ticks at the multiples of a step of 1, 2, 2.5 or 5 x 10^k that divides [lo, hi] into about
// `n_steps` steps, every multiple within [lo - slack, hi + slack]; `decimals` gets the digits a
// label needs after the point (at least `min_decimals`). lo < hi, both finite.
std::vector<double> nice_ticks(double lo, double hi, int n_steps, double slack, int min_decimals,
                               int& decimals);

// The box of a one-line text at (x, y) (y its baseline) of `width` px at `font_size` px, drawn
// with text-anchor `anchor` ("start", "middle" or "end").
PlotBox text_box(double x, double y, double width, double font_size, const std::string& anchor);

// Where a label goes: its anchor point and text-anchor.
struct LabelSpot {
  double x = 0.0, y = 0.0;
  std::string anchor;
};

// The places for a label at `font_size` px beside a mark of `radius` px at (px, py), clear of
// it, in the order they are tried: right-above, left-above, right-below, left-below, above,
// below; then the same a line further from the mark.
std::vector<LabelSpot> spots_beside(double px, double py, double radius, double font_size);

// A label of `width` px at `font_size` px: the first of `spots` whose box lies inside `area`
// and overlaps no box of `taken` (by a pixel's area or more); when none does, the one inside
// `area` that overlaps least (the first spot when none lies inside). Its box is added to
// `taken`. `spots` is not empty.
LabelSpot place_label(const std::vector<LabelSpot>& spots, double width, double font_size,
                      const PlotBox& area, std::vector<PlotBox>& taken);

}  // namespace fasa
