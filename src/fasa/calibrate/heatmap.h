// The picture of functional sparsity: a layer x FC heatmap of mean Contextual Agreement.
#pragma once

#include <string>

#include "fasa/attention/calibration.h"

namespace fasa {

// A self-contained SVG document: one <rect class="cell"> per (calibrated layer, FC) — rows are
// the calibrated layers (a hybrid model's global layers only, each labelled, with a note that
// the sliding-window layers are not calibrated), columns the FCs (FC 0 = highest frequency) —
// coloured by the mean CA over the layer's query heads, each with a <title> tooltip; a title,
// x and y axis labels, layer and FC tick labels, and a colour bar labelled 0.0 / 0.5 / 1.0, all
// as <text>. The title is one line ("MODEL — mean contextual agreement per FC (K = ..., ...
// layout)") when it fits the picture, else the model's name over a <text class="subtitle">
// saying the rest; the picture (its viewBox) is sized from estimated text widths
// (svg_text_width) so that no text leaves it, whatever the model's name and shape. Throws
// fasa::Error when there is nothing to draw (no layers or no FCs) or a mean CA is not finite.
std::string calibration_heatmap_svg(const Calibration& c);

}  // namespace fasa
