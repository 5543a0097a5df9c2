// Policy option tables (attention/policies/option_table.h): parsing, the error per bad input,
// defaults, and the help and docs they write.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fasa/attention/policies/option_table.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"

namespace fasa {
namespace {

// 4 layers, the second a sliding-window one (window 8): global layers 0, 2, 3.
const AttnShape kShape{4, 4, 2, 16, {0, 8, 0, 0}};

const OptionTable& test_table() {
  static const OptionTable t{"demo",
                             {
                                 {"budget", OptionType::Budget, "B", nullptr, kBudgetHelp},
                                 {"n", OptionType::Count, "N", "3", "a count"},
                                 {.key = "w",
                                  .type = OptionType::Whole,
                                  .value = "W",
                                  .fallback = "5",
                                  .help = "a whole",
                                  .lo = 1,
                                  .hi = 9},
                                 {"x", OptionType::Number, "X", "0.25", "a count or a fraction"},
                                 {.key = "f",
                                  .type = OptionType::Fraction,
                                  .value = "F",
                                  .fallback = "0.5",
                                  .help = "a fraction",
                                  .rule = "be a share of the budget in [0, 1]"},
                                 {"sw", OptionType::OnOff, "on|off", "on", "a switch"},
                                 {"mode", OptionType::Enum, "a|bb|c", "bb", "a choice"},
                                 {.key = "dir",
                                  .type = OptionType::Text,
                                  .value = "DIR",
                                  .fallback = "/tmp",
                                  .help = "a directory",
                                  .rule = "name a directory"},
                                 {"layers", OptionType::LayerSet, "L1+L2|none", "0+1+3", "layers"},
                                 {.key = "calc",
                                  .type = OptionType::Count,
                                  .value = "C",
                                  .fallback = "head_dim/2",
                                  .help = "computed",
                                  .computed = true},
                             }};
  return t;
}

std::string error_of(const PolicyOptions& opts, const OptionTable& t = test_table()) {
  try {
    ParsedOptions p(t, opts, kShape);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OptionTable, DefaultsAreTheTablesParsed) {
  const ParsedOptions p(test_table(), {{"budget", "0.1"}}, kShape);
  EXPECT_DOUBLE_EQ(p.budget("budget"), 0.1);
  EXPECT_EQ(p.count("n"), 3);
  EXPECT_EQ(p.count("w"), 5);
  EXPECT_DOUBLE_EQ(p.number("x"), 0.25);
  EXPECT_DOUBLE_EQ(p.number("f"), 0.5);
  EXPECT_TRUE(p.on("sw"));
  EXPECT_EQ(p.text("mode"), "bb");
  EXPECT_EQ(p.text("dir"), "/tmp");
  // The default names layers 0, 1, 3: the sliding-window layer 1 is dropped, not an error.
  EXPECT_EQ(p.layers("layers"), (std::set<int>{0, 3}));
  EXPECT_FALSE(p.given("calc"));
  EXPECT_FALSE(p.given("n"));
  EXPECT_TRUE(p.given("budget"));
}

TEST(OptionTable, GivenValuesReplaceTheDefaults) {
  const ParsedOptions p(test_table(),
                        {{"budget", "64"},
                         {"n", "0"},
                         {"w", "9"},
                         {"x", "7"},
                         {"f", "1"},
                         {"sw", "off"},
                         {"mode", "c"},
                         {"dir", "/d"},
                         {"layers", "2+3"},
                         {"calc", "4"}},
                        kShape);
  EXPECT_DOUBLE_EQ(p.budget("budget"), 64.0);
  EXPECT_EQ(p.count("n"), 0);
  EXPECT_EQ(p.count("w"), 9);
  EXPECT_DOUBLE_EQ(p.number("x"), 7.0);
  EXPECT_DOUBLE_EQ(p.number("f"), 1.0);
  EXPECT_FALSE(p.on("sw"));
  EXPECT_EQ(p.text("mode"), "c");
  EXPECT_EQ(p.text("dir"), "/d");
  EXPECT_EQ(p.layers("layers"), (std::set<int>{2, 3}));
  EXPECT_EQ(p.count("calc"), 4);
  EXPECT_EQ(ParsedOptions(test_table(), {{"budget", "1"}, {"layers", "none"}}, kShape)
                .layers("layers"),
            std::set<int>{});
}

TEST(OptionTable, UnknownKeyListsTheOptions) {
  EXPECT_EQ(error_of({{"budget", "8"}, {"pages", "2"}}),
            "policy 'demo' has no option 'pages' (options: budget, n, w, x, f, sw, mode, dir, "
            "layers, calc)");
  const OptionTable none{"plain", {}};
  EXPECT_EQ(error_of({{"budget", "8"}}, none), "policy 'plain' takes no options (got 'budget')");
  EXPECT_EQ(error_of({}, none), "");
}

TEST(OptionTable, EachTypeHasOneMessageForABadValue) {
  const PolicyOptions b = {{"budget", "8"}};
  auto with = [&](const std::string& k, const std::string& v) {
    PolicyOptions o = b;
    o[k] = v;
    return error_of(o);
  };
  EXPECT_EQ(with("budget", "0"),
            "policy 'demo': budget must be a positive number of tokens or a fraction < 1 (got "
            "'0')");
  EXPECT_EQ(with("budget", "2.5"),
            "policy 'demo': a budget >= 1 must be a whole number of tokens (got '2.5')");
  for (const char* v : {"x", "-1", "", "16777217", "2.0"}) {
    EXPECT_EQ(with("n", v),
              fmt::format("policy 'demo': n must be a non-negative whole number (got '{}')", v));
  }
  for (const char* v : {"0", "10", "+3", "3x", ""}) {
    EXPECT_EQ(with("w", v), fmt::format("policy 'demo': w must be a whole number in [1, 9] (got "
                                        "'{}')",
                                        v));
  }
  for (const char* v : {"0", "-0.5", "2.5", "x", ""}) {
    EXPECT_EQ(with("x", v),
              fmt::format("policy 'demo': x must be a count or a fraction in (0, 1) (got '{}')",
                          v));
  }
  for (const char* v : {"1.5", "-0.1", "y"}) {  // the row's own rule
    EXPECT_EQ(with("f", v),
              fmt::format("policy 'demo': f must be a share of the budget in [0, 1] (got '{}')",
                          v));
  }
  EXPECT_EQ(with("sw", "yes"), "policy 'demo': sw must be 'on' or 'off' (got 'yes')");
  EXPECT_EQ(with("mode", "b"), "policy 'demo': mode must be 'a', 'bb' or 'c' (got 'b')");
  EXPECT_EQ(with("dir", ""), "policy 'demo': dir must name a directory");
  EXPECT_EQ(with("layers", "0+x"),
            "policy 'demo': layers must be a non-negative whole number (got 'x')");
  EXPECT_EQ(with("layers", "4"),
            "policy 'demo': dense layer 4 does not exist (the model has 4 "
            "layers)");
  EXPECT_EQ(with("layers", "1"),
            "policy 'demo': layer 1 is a sliding-window layer (it attends over its window of 8, "
            "outside any policy); layers may name the global layers 0, 2, 3");
  // The spec's keys are checked in their (sorted) order: the first bad one is reported.
  EXPECT_EQ(error_of({{"budget", "8"}, {"mode", "z"}, {"n", "z"}}),
            "policy 'demo': mode must be 'a', 'bb' or 'c' (got 'z')");
}

TEST(OptionTable, RequiredOptionsAreAskedFor) {
  EXPECT_EQ(error_of({}), "policy 'demo' needs a budget (e.g. --policy demo:budget=256)");
  const OptionTable t{"cal",
                      {
                          {.key = "calib",
                           .type = OptionType::Text,
                           .value = "PATH",
                           .fallback = nullptr,
                           .help = "a file",
                           .missing = "needs a calibration file"},
                          {"budget", OptionType::Budget, "B", nullptr, kBudgetHelp},
                      }};
  EXPECT_EQ(error_of({{"budget", "8"}}, t), "policy 'cal' needs a calibration file");
  EXPECT_EQ(error_of({{"budget", "8"}, {"calib", ""}}, t), "policy 'cal' needs a calibration file");
  // Values are checked before anything is asked for; required rows in table order.
  EXPECT_EQ(error_of({{"zz", "8"}}, t), "policy 'cal' has no option 'zz' (options: calib, budget)");
  EXPECT_EQ(error_of({}, t), "policy 'cal' needs a calibration file");
  EXPECT_EQ(error_of({{"calib", "c.json"}}, t),
            "policy 'cal' needs a budget (e.g. --policy "
            "cal:budget=256)");
}

TEST(OptionTable, FailRuleRepeatsTheRowsMessageWithTheModelsHeadDim) {
  const OptionTable t{"r",
                      {{.key = "r",
                        .type = OptionType::Number,
                        .value = "R",
                        .fallback = "head_dim/8",
                        .help = "r",
                        .rule = "be at most head_dim = {head_dim}",
                        .computed = true}}};
  const ParsedOptions p(t, {{"r", "17"}}, kShape);
  try {
    p.fail_rule("r");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "policy 'r': r must be at most head_dim = 16 (got '17')");
  }
}

TEST(OptionTable, HelpAndMarkdownComeFromTheRows) {
  const OptionTable t{"demo",
                      {
                          {"budget", OptionType::Budget, "B", nullptr, "tokens"},
                          {"gqa", OptionType::Enum, "shared|per-head", "shared",
                           "one list or many"},
                      }};
  EXPECT_EQ(options_markdown(t), "`budget=B` (required), `gqa=shared\\|per-head` (shared)");
  EXPECT_EQ(options_help(t, 2),
            "  budget=B (required): tokens\n  gqa=shared|per-head (shared): one list or many\n");
  EXPECT_EQ(options_markdown(OptionTable{"none", {}}), "none");
}

// Every policy's table: literal defaults parse as their type (a computed one is the policy's
// to work out), every key appears in the help, and calib= is what makes a policy calibrated.
TEST(OptionTable, EveryPolicysDefaultsParse) {
  const AttnShape shape{4, 4, 2, 16, {}};
  for (const PolicyEntry& e : policy_entries()) {
    const OptionTable& t = e.options();
    EXPECT_EQ(std::string(t.policy), e.name);
    PolicyOptions required;
    for (const PolicyOption& r : t.rows) {
      if (!r.fallback)
        required.emplace(r.key, std::string(r.type == OptionType::Budget ? "8" : "x"));
    }
    const ParsedOptions p(t, required, shape);
    for (const PolicyOption& r : t.rows) {
      SCOPED_TRACE(std::string(e.name) + " " + r.key);
      EXPECT_NE(policy_help().find(std::string(r.key) + "=" + r.value), std::string::npos);
      if (!r.fallback || r.computed) continue;
      switch (r.type) {
        case OptionType::Budget: p.budget(r.key); break;
        case OptionType::Count:
        case OptionType::Whole: p.count(r.key); break;
        case OptionType::Number:
        case OptionType::Fraction: p.number(r.key); break;
        case OptionType::OnOff: p.on(r.key); break;
        case OptionType::Enum: {
          std::vector<std::string> choices;  // of r.value, "a|b|c"
          std::stringstream in(r.value);
          for (std::string c; std::getline(in, c, '|');) choices.push_back(c);
          EXPECT_NE(std::find(choices.begin(), choices.end(), p.text(r.key)), choices.end());
          break;
        }
        case OptionType::Text: p.text(r.key); break;
        case OptionType::LayerSet: p.layers(r.key); break;
      }
    }
    EXPECT_EQ(policy_takes_calibration(e.name), t.find("calib") != nullptr);
  }
}

// docs/POLICIES.md's table lists each policy's options exactly as its table declares them
// (options_markdown), so the doc cannot drift from the code.
TEST(OptionTable, DocOptionsMatchTheTables) {
  std::ifstream f(std::string(FASA_SOURCE_DIR) + "/docs/POLICIES.md");
  ASSERT_TRUE(f) << "cannot read docs/POLICIES.md";
  std::map<std::string, std::string> doc;  // policy -> its options cell
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    const size_t name_end = line.find("` |");
    if (name_end == std::string::npos) continue;
    const std::string name = line.substr(3, name_end - 3);
    const size_t cell = name_end + 4;
    const size_t cell_end = line.find(" | ", cell);
    ASSERT_NE(cell_end, std::string::npos) << line;
    EXPECT_FALSE(doc.count(name)) << "listed twice: " << name;
    doc[name] = line.substr(cell, cell_end - cell);
  }
  for (const PolicyEntry& e : policy_entries()) {
    ASSERT_TRUE(doc.count(e.name)) << "docs/POLICIES.md has no row for " << e.name;
    EXPECT_EQ(doc[e.name], options_markdown(e.options())) << e.name;
    doc.erase(e.name);
  }
  for (const auto& [name, cell] : doc) ADD_FAILURE() << "docs/POLICIES.md lists unknown " << name;
}

}  // namespace
}  // namespace fasa
