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

// The width in px that `text` (UTF-8) takes at `font_size` px in a sans-serif font, estimated
// from above: each character counts at least its width in DejaVu Sans (the widest common
// default), 0.42 em for the narrow ones (space, punctuation, i, l, t, ...), 0.64 em for lower
// case and digits, 0.8 em for upper case, 1 em for m, w, M, W, a few symbols and any non-ASCII
// character (an em dash is 1 em), so that a picture laid out with it leaves room for its text.
double svg_text_width(std::string_view text, double font_size);

// Writes `svg` to `path` through an AtomicFile. Throws fasa::Error, naming the path, when the
// name does not end in ".svg" (nothing is written) or the file cannot be written.
void write_svg_file(const std::string& path, std::string_view svg);

}  // namespace fasa
