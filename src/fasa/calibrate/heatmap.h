// The picture of functional sparsity: a layer x FC heatmap of mean Contextual Agreement.
#pragma once

#include <string>

#include "fasa/attention/calibration.h"

namespace fasa {

// A self-contained SVG document: one row per calibrated layer (a hybrid model's global layers
// only, each labelled, with a note that the sliding-window layers are not calibrated), one
// column per FC (FC 0 = highest frequency), colour = mean CA over the layer's query heads, with
// a colour bar.
std::string calibration_heatmap_svg(const Calibration& c);

// The same heatmap as the bytes of a PNG file (8-bit RGB): cells of 14x10 px, one row per
// calibrated layer, layer numbers on the left (every 5 layers when all are calibrated, every
// row otherwise), FC numbers every 4 FCs on top, a colour bar (0.0 to 1.0) on the right. Only
// digits are drawn; the SVG carries the full labels.
std::string calibration_heatmap_png(const Calibration& c);

}  // namespace fasa
