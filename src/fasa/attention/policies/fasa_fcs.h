// Which frequency chunks FASA's TIP scores with, per (global layer, query head), and the
// per-layer budget weights (layer_budget=calibrated): fasa.cpp's choices from a calibration.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "fasa/attention/calibration.h"

namespace fasa {

struct FcChoice {
  std::string fcs = "compound";  // compound|calibrated|random|high|low|mass
  bool per_group = true;         // fc_sets=group: the group's heads share one set
  int n_tip = 8;                 // FCs per head (per group with per_group)
};

// The key dims TIP scores each (global layer, head) with: the n_tip FCs of `ch`, each FC's two
// dims in turn. Criteria (best first): calibrated = mean CA, mass = summed channel importance of
// the FC's dims, compound = the greedy compound CA order (n_tip beyond the calibration's
// n_compound: then the other FCs by mean CA); per_group ranks by the mean over the group's heads
// (compound: the group's own greedy set). [n_global * n_heads][2 * n_tip]
std::vector<std::vector<int>> fasa_head_dims(const AttnShape& shape, const FcChoice& ch,
                                             const Calibration& c);

// layer_budget=calibrated: [n_layers] weight per layer, 0 for sliding-window and dense layers;
// over the other (selecting) layers w_l = d_l / mean(d), d_l = 1 - A_l, A_l = the mean over the
// layer's query heads of the compound CA of their first n_tip compound FCs. So layers whose
// dominant FCs agree less with the full head get more of the budget, and the mean weight is 1
// (d_l is at least 1e-6, so every selecting layer keeps a weight > 0). Needs a version-4 calibration with n_compound >= n_tip.
std::vector<double> calibrated_layer_weights(const AttnShape& shape, const Calibration& c,
                                             int n_tip, const std::set<int>& dense_layers);

}  // namespace fasa
