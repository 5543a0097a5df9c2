// The picture of functional sparsity: a layer x FC heatmap of mean Contextual Agreement.
#pragma once

#include <string>

#include "fasa/calibrate/calibration.h"

namespace fasa {

// A self-contained SVG document: one row per layer, one column per FC (FC 0 = highest
// frequency), colour = mean CA over the layer's query heads, with a colour bar.
std::string calibration_heatmap_svg(const Calibration& c);

}  // namespace fasa
