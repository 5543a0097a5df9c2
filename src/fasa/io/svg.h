// What every SVG picture fasa writes shares (eval's line plots, calibrate's heatmap): text made
// safe for XML, and the file written whole (crash-safe) under a name that says it is SVG.
// Pictures are SVG so that titles, axis labels, tick labels and legends are real text (any
// browser shows them; `rsvg-convert -o FILE.png FILE.svg`, Debian librsvg2-bin, makes a PNG).
#pragma once

#include <string>
#include <string_view>

namespace fasa {

// `s` as XML character data or an attribute value: & < > " ' as entities, and the control
// characters XML 1.0 does not allow (all below 0x20 but tab, newline, return) as '?'.
std::string svg_escape(std::string_view s);

// Writes `svg` to `path` through an AtomicFile. Throws fasa::Error, naming the path, when the
// name does not end in ".svg" (nothing is written) or the file cannot be written.
void write_svg_file(const std::string& path, std::string_view svg);

}  // namespace fasa
