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

// The candidate nearest to `typed` (Damerau-Levenshtein distance, at most about a third of its
// length), "" when none is that near. Ties: the first in `candidates`.
std::string nearest(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace fasa::cli
