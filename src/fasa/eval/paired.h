// Two settings of one sweep on the same tasks (`fasa eval paired`), budget by budget: the paired
// difference of their scores with its 95 % interval, the tasks each wins, a sign test on those
// wins (McNemar's exact test when scores are 0 or 1), and the KV bytes each read per token.
#pragma once

#include <string>
#include <vector>

#include "fasa/eval/sweep_scores.h"

namespace fasa {

struct PairedRow {
  double budget = 0.0;                  // of A's setting (B's when A has none, e.g. full)
  std::string a_spec, b_spec;           // the settings compared
  double a = 0.0, b = 0.0;              // scores: mean of the kinds' means
  double diff = 0.0;                    // a - b, the mean of kind means of per-task differences,
  double diff_ci95 = 0.0;               // and its 95 % half-width (ci95_half_width)
  std::vector<double> kind_diff;        // [n_kinds]
  int a_wins = 0, b_wins = 0;           // tasks A scored higher / lower than B
  double p_sign = 1.0;                  // two-sided exact sign test on (a_wins, b_wins)
  double a_bytes = 0.0, b_bytes = 0.0;  // KV bytes read per decoded token
};

// The two-sided exact sign test: P(a result at least as uneven as (wins, losses) out of
// wins + losses fair coin flips); 1 when there are none. With 0/1 scores, McNemar's exact test.
double sign_test_p(int wins, int losses);

// Pairs label A's settings with label B's at the same budget (a label with no budget, as full,
// pairs with every budget of the other). Labels as SweepScores::label. Throws fasa::Error naming
// the sweep's labels when one is unknown, or when the two share no budget.
std::vector<PairedRow> paired_rows(const SweepScores& s, const std::string& a,
                                   const std::string& b);

std::string paired_markdown(const SweepScores& s, const std::string& a, const std::string& b,
                            const std::vector<PairedRow>& rows);
std::string paired_json(const SweepScores& s, const std::string& a, const std::string& b,
                        const std::vector<PairedRow>& rows);

}  // namespace fasa
