#include "fasa/eval/plot_layout.h"

#include <algorithm>
#include <cmath>

namespace fasa {

double overlap_area(const PlotBox& a, const PlotBox& b) {
  const double w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  const double h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  return w > 0.0 && h > 0.0 ? w * h : 0.0;
}

std::vector<double> nice_ticks(double lo, double hi, int n_steps, double slack, int min_decimals,
                               int& decimals) {
  const double raw = (hi - lo) / std::max(n_steps, 1);
  const int k = static_cast<int>(std::floor(std::log10(raw)));  // raw = m 10^k, 1 <= m < 10
  const double mag = std::pow(10.0, k);
  double step = 10.0 * mag;
  decimals = std::max(0, -(k + 1));
  for (const double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * mag >= raw * (1.0 - 1e-9)) {
      step = m * mag;
      decimals = std::max(0, (m == 2.5 ? 1 : 0) - k);
      break;
    }
  }
  decimals = std::max(decimals, min_decimals);
  std::vector<double> ticks;
  const double first = std::ceil((lo - slack) / step - 1e-9);
  for (double i = first; i * step <= hi + slack + 1e-9 * step; i += 1.0) {
    ticks.push_back(i == 0.0 ? 0.0 : i * step);
  }
  return ticks;
}

PlotBox text_box(double x, double y, double width, double font_size, const std::string& anchor) {
  const double x0 = anchor == "end" ? x - width : anchor == "middle" ? x - width / 2 : x;
  return {x0, y - 0.8 * font_size, x0 + width, y + 0.25 * font_size};
}

std::vector<LabelSpot> spots_beside(double px, double py, double radius, double font_size) {
  const double dx = radius + 2.0;
  std::vector<LabelSpot> spots;
  for (const double gap : {dx, dx + 1.1 * font_size}) {  // by the mark, then a line further
    const double below = gap + 0.8 * font_size;
    const std::vector<LabelSpot> ring = {{px + dx, py - gap, "start"},
                                         {px - dx, py - gap, "end"},
                                         {px + dx, py + below, "start"},
                                         {px - dx, py + below, "end"},
                                         {px, py - gap - 2.0, "middle"},
                                         {px, py + below + 2.0, "middle"}};
    spots.insert(spots.end(), ring.begin(), ring.end());
  }
  return spots;
}

LabelSpot place_label(const std::vector<LabelSpot>& spots, double width, double font_size,
                      const PlotBox& area, std::vector<PlotBox>& taken) {
  const LabelSpot* best = &spots.front();
  double best_overlap = INFINITY;
  for (const LabelSpot& s : spots) {
    const PlotBox b = text_box(s.x, s.y, width, font_size, s.anchor);
    const bool inside = b.x0 >= area.x0 && b.x1 <= area.x1 && b.y0 >= area.y0 && b.y1 <= area.y1;
    if (!inside) continue;
    double overlap = 0.0;
    for (const PlotBox& t : taken) overlap += overlap_area(b, t);
    if (overlap < best_overlap) best = &s, best_overlap = overlap;
    if (overlap < 1.0) break;  // a sliver under a pixel: free
  }
  taken.push_back(text_box(best->x, best->y, width, font_size, best->anchor));
  return *best;
}

}  // namespace fasa
