// The comma lists of `fasa bench` (-p, -n, -b, -d, --policy, --budget), parsed so that every bad
// element ends in one fasa error naming its flag.
#pragma once

#include <string>
#include <vector>

#include "cli_common.h"

namespace fasa::cli {

// "a,b,c" -> {a, b, c}; an empty list or element is an error naming the flag.
std::vector<std::string> split_list(const std::string& flag, const std::string& text);

// A list of token counts or depths, each a whole number >= 0.
std::vector<int> parse_counts(const std::string& flag, const std::string& text);

// The policies bench measures, in order: --policy × --budget (policy-major, each with the other
// policy flags folded in, as one --policy/--budget pair would be in `fasa run`), then --compare.
// A policy that takes no options (`full`) gets no flags and appears once. Measuring one policy
// twice is refused rather than silently dropped: it is always a typo, and the rows the user
// asked for should be the rows printed.
std::vector<std::string> bench_policy_specs(const PolicyArgs& args);

}  // namespace fasa::cli
