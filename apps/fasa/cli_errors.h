// The CLI's parse errors as one line (`fasa: error: ...`, exit 1, as the README promises), with a
// "did you mean" for a mistyped flag or subcommand; `--help` and `--version` still print and
// exit 0.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fasa::cli {

// Prints the one error line for `e` (raised parsing `args`, argv[0] first) and returns the exit
// status: 0 for --help/--version (printed by CLI11), 1 for every error.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e,
                       const std::vector<std::string>& args);

// A single-dash word of two or more letters (`-fa`, `-hf`, `-temp`) that llama_cpp_spellings
// left as typed: CLI11 would read it as a one-letter flag with its value glued on (-f a) or as
// several one-letter flags (-h -f), so it is refused before parsing. Returns the error line's
// text (an unknown flag, with a suggestion), "" when there is none.
std::string single_dash_word_error(const CLI::App& app, const std::vector<std::string>& args);

// The candidate nearest to `typed`, compared without their dashes: at a Damerau-Levenshtein
// distance of at most a third of the shorter word's length (so a one- or two-letter flag is
// only suggested for the same letters with other dashes); "" when none is that near. Ties: the
// first in `candidates`.
std::string nearest(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace fasa::cli
