// Policy options declared once: a policy lists its options as rows (key, type, how the value is
// written, default, one line of help); the same table parses a spec's key=value pairs into typed
// values with one clear error per bad input, and writes the policy's help and its row of the
// options column in docs/POLICIES.md (Policies.DocOptionsMatchTheTables checks the doc).
//
// Errors (P the policy, KEY the option, V the value as typed):
//   unknown key       policy 'P' has no option 'KEY' (options: a, b, c)   (P takes no options
//                     (got 'KEY') when the table is empty)
//   bad value         policy 'P': KEY must RULE (got 'V'), RULE the row's `rule` or its type's:
//                     budget (parse_budget's two messages), count "be a non-negative whole
//                     number", whole "be a whole number in [lo, hi]", number "be a count or a
//                     fraction in (0, 1)", fraction "be a number in [0, 1]", on/off "be 'on' or
//                     'off'", enum "be 'a', 'b' or 'c'" (the choices of `value`), layer set
//                     (its own messages: a missing or sliding-window layer); text accepts anything
//                     unless it has a rule,
//                     then an empty value fails with "policy 'P': KEY must RULE".
//   missing required  policy 'P' MISSING (the row's `missing`; a budget's default: "needs a
//                     budget (e.g. --policy P:budget=256)"). An empty text counts as missing.
// The keys are checked in the spec's order (PolicyOptions is sorted by key), the required rows
// after them in table order. Range checks that depend on other options or on the model beyond the
// layer list (sparq's r <= head_dim, Quest's page >= 1, SnapKV's odd kernel) stay in the policy;
// it may reuse a row's message with ParsedOptions::fail_rule.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "fasa/attention/policy.h"

namespace fasa {

enum class OptionType {
  Budget,    // tokens per step, or a fraction < 1 of the context (parse_budget)
  Count,     // a whole number in [0, 2^24]
  Whole,     // a whole number in [lo, hi], digits only
  Number,    // a count (whole, >= 1) or a fraction in (0, 1)
  Fraction,  // a number in [0, 1]
  OnOff,     // on|off
  Enum,      // one of the '|'-separated choices in `value`
  Text,      // any text (a path, a directory)
  LayerSet,  // L1+L2|none: existing global layers; a default drops the sliding-window ones
};

struct PolicyOption {
  const char* key;
  OptionType type;
  const char* value;  // how the value is written in help: "B", "PATH", "shared|per-head"
  // The default as shown in help and docs, parsed as the value when the key is absent; nullptr:
  // the option is required. With `computed`, only shown: the policy works the default out.
  const char* fallback;
  const char* help;               // one line: what the option does
  int lo = 0, hi = 0;             // Whole: the range
  const char* rule = nullptr;     // replaces the type's rule in the bad-value message
  const char* missing = nullptr;  // required: the message after "policy 'P' "
  bool computed = false;
};

// The budget row's help, shared by the policies whose budget is per kv-head group.
inline constexpr const char* kBudgetHelp =
    "tokens attended per decode step per kv-head group (< 1: a fraction of the context)";

// The slice row of the policies that score from a packed slice (fasa, double-sparsity).
inline const PolicyOption kSliceRow{"slice", OptionType::Enum, "auto|f16|q8|q4", "auto",
                                    "how the packed slice TIP reads stores its values: the cache's "
                                    "own (auto), fp16, or int8 / "
                                    "int4 codes with one fp16 scale per dim and 32 slots"};

// The budget row (required) of the policies whose budget is per kv-head group.
inline const PolicyOption kBudgetRow{"budget", OptionType::Budget, "B", nullptr, kBudgetHelp};

struct OptionTable {
  const char* policy;
  std::vector<PolicyOption> rows;
  const PolicyOption* find(const std::string& key) const;
  // "a, b, c": the keys in table order.
  std::string key_list() const;
};

// The values of one spec, typed by the table. Getters take a key of the table (of the getter's
// type); an absent key gives the parsed default.
// The calibration rows of the calibrated policies (fasa, double-sparsity, pyramidkv+fasa).
inline const PolicyOption kCalibRow{
    "calib", OptionType::Text, "PATH|auto|online", "auto",
    "a calibration file from `fasa calibrate` made for this model file; auto: the newest one "
    "stored for this model file (`fasa calib list`), else online; online: calibrate on the "
    "prompt itself"};
inline const PolicyOption kCalibWindowRow{.key = "calib_window",
                                          .type = OptionType::Whole,
                                          .value = "W",
                                          .fallback = "32",
                                          .help =
                                              "calib=online: the queries of the last W prompt "
                                              "positions calibrate (of the first "
                                              "W decode steps where no prefill is seen)",
                                          .lo = 1,
                                          .hi = 4096};
inline const PolicyOption kCalibSpreadRow{
    .key = "calib_spread",
    .type = OptionType::Whole,
    .value = "P",
    .fallback = "0",
    .help = "calib=online: up to P more prompt queries, spread evenly over the whole prompt",
    .lo = 0,
    .hi = 4096};
inline const PolicyOption kCalibRefreshRow{
    .key = "calib_refresh",
    .type = OptionType::Whole,
    .value = "R",
    .fallback = "0",
    .help = "calib=online: calibrate again every R decode steps from the newest queries (0: never)",
    .lo = 0,
    .hi = 1 << 20};
inline const PolicyOption
    kCalibKeysRow{.key = "calib_keys",
                  .type = OptionType::Whole,
                  .value = "S",
                  .fallback = "512",
                  .help =
                      "calib=online: keys per query the compound greedy samples to estimate each "
                      "candidate's K-th best score (0: every key, exact)",
                  .lo = 0,
                  .hi = 1 << 20};

class ParsedOptions {
 public:
  ParsedOptions(const OptionTable& table, const PolicyOptions& opts, const AttnShape& shape);
  const char* policy() const { return table_.policy; }
  bool given(const std::string& key) const { return opts_.count(key) != 0; }
  double budget(const std::string& key) const;
  int count(const std::string& key) const;      // Count and Whole
  double number(const std::string& key) const;  // Number and Fraction
  bool on(const std::string& key) const;        // OnOff
  // Enum: the choice (one of `value`'s); Text: the value.
  std::string text(const std::string& key) const;
  std::set<int> layers(const std::string& key) const;  // LayerSet
  // Throws the row's bad-value message for the value given for key.
  [[noreturn]] void fail_rule(const std::string& key) const;

 private:
  const PolicyOption& row(const std::string& key, OptionType a, OptionType b) const;
  std::string value_or_default(const PolicyOption& r) const;
  const OptionTable& table_;
  PolicyOptions opts_;
  AttnShape shape_;
};

// "`budget=B` (required), `gqa=shared\|per-head` (shared)": the options cell of the policy's row
// in docs/POLICIES.md ("none" for an empty table).
std::string options_markdown(const OptionTable& t);
// One line per option, indented by `indent`: "budget=B (required): tokens attended ...".
std::string options_help(const OptionTable& t, int indent);

}  // namespace fasa
