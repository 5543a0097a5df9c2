#include "bench_lists.h"

#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include "fasa/attention/policy.h"
#include "fasa/core/error.h"

namespace fasa::cli {

std::vector<std::string> split_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (out.back().empty()) {
      fail("{} '{}': empty element (expected a comma-separated list)", flag, text);
    }
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::vector<int> parse_counts(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  for (const std::string& s : split_list(flag, text)) {
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v < 0) {
      fail("{} '{}': '{}' is not a whole number >= 0", flag, text, s);
    }
    out.push_back(v);
  }
  return out;
}

namespace {

// --policy elements may be whole specs with options of their own ("oracle:budget=8,gqa=shared"),
// whose commas are the list's too: a piece that is key=value ('=' before any ':'; policy names
// hold neither) continues the spec before it, any other piece starts a new one.
std::vector<std::string> split_policies(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& piece : split_list("--policy", text)) {
    const size_t eq = piece.find('='), colon = piece.find(':');
    if (eq == std::string::npos || (colon != std::string::npos && colon < eq)) {
      out.push_back(piece);
    } else if (out.empty()) {
      fail("--policy '{}': option '{}' comes before any policy name", text, piece);
    } else {
      out.back() += "," + piece;
    }
  }
  return out;
}

// A policy that takes no options: the policy flags are not folded into it, and it is measured
// once however many budgets are given. The registry keeps no per-policy option list, so the
// rule is spelled out here: today only `full` (dense attention; its factory rejects every
// option). A spec with options of its own ("full:x=1") is passed on as written.
bool takes_no_options(const std::string& policy) { return policy == "full"; }

bool has_policy_flags(PolicyArgs p) {
  p.policy.clear();
  return !p.spec().empty();  // only the flags are left to fold in
}

// Two specs name the same policy when their names and options agree, in any order.
std::string canonical_spec(const std::string& spec) {
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  std::string s = name;
  for (const auto& [k, v] : opts) s.append(",").append(k).append("=").append(v);
  return s;
}

}  // namespace

std::vector<std::string> bench_policy_specs(const PolicyArgs& args) {
  const std::vector<std::string> policies = split_policies(args.policy);
  const std::vector<std::string> budgets =
      args.budget.empty() ? std::vector<std::string>{""} : split_list("--budget", args.budget);
  const auto taker = std::find_if(policies.begin(), policies.end(),
                                  [](const std::string& p) { return !takes_no_options(p); });
  if (taker == policies.end() && has_policy_flags(args)) {
    fail(
        "--policy {}: the policy flags (--budget, --calib, ...) apply to none of these "
        "policies (full takes no options)",
        args.policy);
  }
  if (taker != policies.end()) {
    const std::string name = taker->substr(0, taker->find(':'));
    for (const std::string& b : budgets) {  // fail before the model loads, naming the list
      if (b.empty()) continue;
      try {
        parse_budget(name, b);
      } catch (const Error& e) {
        fail("--budget '{}': {}", args.budget, e.what());
      }
    }
  }
  std::vector<std::string> specs;
  for (const std::string& p : policies) {
    if (takes_no_options(p)) {
      specs.push_back(p);
      continue;
    }
    for (const std::string& b : budgets) {
      PolicyArgs one = args;
      one.policy = p;
      one.budget = b;
      specs.push_back(one.spec());
    }
  }
  specs.insert(specs.end(), args.compare.begin(), args.compare.end());
  std::map<std::string, std::string> seen;  // canonical -> as given
  for (const std::string& s : specs) {
    const auto [it, fresh] = seen.emplace(canonical_spec(s), s);
    if (fresh) continue;
    const std::string first = it->second == s ? "" : fmt::format(", first as '{}'", it->second);
    fail(
        "policy '{}' is listed twice (in --policy × --budget and --compare{}); list each "
        "policy once",
        s, first);
  }
  return specs;
}

}  // namespace fasa::cli
