// Confidence intervals of task scores (eval sweep's error bars).
#pragma once

#include <vector>

namespace fasa {

// The 95 % confidence half-width of a mean of kind means (the sweep's score: each kind's mean
// task score, averaged over the K kinds), by the normal approximation of a stratified mean: kind
// k's n_k scores with sample variance s_k^2 (denominator n_k - 1; 0 for a kind of one task) give
// Var = sum_k s_k^2 / (K^2 n_k), and the interval is mean +- 1.96 sqrt(Var). With one kind this
// is the plain mean +- 1.96 s / sqrt(n). scores_by_kind: [K][n_k]; empty kinds are skipped.
double ci95_half_width(const std::vector<std::vector<double>>& scores_by_kind);

}  // namespace fasa
