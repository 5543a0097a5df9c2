#include "fasa/eval/confidence.h"

#include <cmath>

namespace fasa {

double ci95_half_width(const std::vector<std::vector<double>>& scores_by_kind) {
  double var = 0.0;  // of the mean of kind means, times K^2
  int n_kinds = 0;
  for (const std::vector<double>& s : scores_by_kind) {
    if (s.empty()) continue;
    n_kinds += 1;
    const double n = static_cast<double>(s.size());
    if (s.size() < 2) continue;
    double mean = 0.0;
    for (double x : s) mean += x / n;
    double ss = 0.0;
    for (double x : s) ss += (x - mean) * (x - mean);
    var += ss / (n - 1.0) / n;
  }
  if (n_kinds == 0) return 0.0;
  return 1.96 * std::sqrt(var) / n_kinds;
}

}  // namespace fasa
