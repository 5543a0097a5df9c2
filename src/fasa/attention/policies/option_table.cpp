#include "fasa/attention/policies/option_table.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "fasa/attention/calibration.h"
#include "fasa/core/error.h"

namespace fasa {

namespace {

// A whole number in [0, 2^24]; false otherwise.
bool to_count(const std::string& v, int* out) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < 0 || x > (1 << 24)) return false;
  *out = static_cast<int>(x);
  return true;
}

// Digits only (at most 9), in [lo, hi].
bool to_whole(const std::string& v, int lo, int hi, int* out) {
  const bool digits = !v.empty() && v.size() <= 9 &&
                      std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long x = digits ? std::stol(v) : -1;
  if (!digits || x < lo || x > hi) return false;
  *out = static_cast<int>(x);
  return true;
}

bool to_double(const std::string& v, double* out) {
  char* end = nullptr;
  *out = std::strtod(v.c_str(), &end);
  return !v.empty() && *end == '\0';
}

// Number: a count (whole, >= 1) or a fraction in (0, 1).
bool to_number(const std::string& v, double* out) {
  return to_double(v, out) && *out > 0.0 && (*out < 1.0 || *out == std::floor(*out));
}

bool to_fraction(const std::string& v, double* out) {
  return to_double(v, out) && *out >= 0.0 && *out <= 1.0;
}

std::vector<std::string> choices(const PolicyOption& r) {
  std::vector<std::string> out;
  const std::string v = r.value;
  size_t start = 0;
  while (true) {
    const size_t bar = v.find('|', start);
    out.push_back(v.substr(start, bar - start));
    if (bar == std::string::npos) return out;
    start = bar + 1;
  }
}

// The type's rule (see option_table.h), or the row's own; "{head_dim}" becomes the model's.
std::string rule_of(const PolicyOption& r, const AttnShape& shape) {
  std::string rule;
  if (r.rule) {
    rule = r.rule;
  } else {
    switch (r.type) {
      case OptionType::Count: rule = "be a non-negative whole number"; break;
      case OptionType::Whole:
        rule = fmt::format("be a whole number in [{}, {}]", r.lo, r.hi);
        break;
      case OptionType::Number: rule = "be a count or a fraction in (0, 1)"; break;
      case OptionType::Fraction: rule = "be a number in [0, 1]"; break;
      case OptionType::OnOff: rule = "be 'on' or 'off'"; break;
      case OptionType::Enum: {
        const std::vector<std::string> c = choices(r);
        rule = "be ";
        for (size_t i = 0; i < c.size(); ++i) {
          rule += (i == 0 ? "" : i + 1 == c.size() ? " or " : ", ") + ("'" + c[i] + "'");
        }
        break;
      }
      default: FASA_CHECK(false);  // budget and layer sets have messages of their own
    }
  }
  const size_t at = rule.find("{head_dim}");
  if (at != std::string::npos) rule.replace(at, 10, std::to_string(shape.head_dim));
  return rule;
}

// `dense_layers=L1+L2|none`, each an existing global layer of `shape` (a
// sliding-window layer attends over its window, outside any policy: naming one is an error that
// lists the global layers).
std::set<int> parse_layers(const std::string& policy, const std::string& key,
                           const std::string& value, const AttnShape& shape) {
  std::set<int> layers;
  if (value == "none") return layers;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t plus = value.find('+', start);
    const std::string item = value.substr(start, plus - start);
    int l = 0;
    if (!to_count(item, &l)) {
      fail("policy '{}': {} must be a non-negative whole number (got '{}')", policy, key, item);
    }
    if (l >= shape.n_layers) {
      fail("policy '{}': dense layer {} does not exist (the model has {} layers)", policy, l,
           shape.n_layers);
    }
    if (shape.window(l) > 0) {
      fail(
          "policy '{}': layer {} is a sliding-window layer (it attends over its window of {}, "
          "outside any policy); {} may name the global layers {}",
          policy, l, shape.window(l), key, layer_list_text(shape.global_layers()));
    }
    layers.insert(l);
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return layers;
}

// A default layer set names layer numbers; on a hybrid stack the sliding-window ones among them
// (and any past the model's last layer) are no concern of the policy's and are dropped.
std::set<int> default_layers(const std::string& text, const AttnShape& shape) {
  std::set<int> layers;
  if (text == "none") return layers;
  size_t start = 0;
  while (true) {
    const size_t plus = text.find('+', start);
    int l = 0;
    FASA_CHECK(to_count(text.substr(start, plus - start), &l));
    if (l < shape.n_layers && shape.window(l) == 0) layers.insert(l);
    if (plus == std::string::npos) return layers;
    start = plus + 1;
  }
}

}  // namespace

const PolicyOption* OptionTable::find(const std::string& key) const {
  for (const PolicyOption& r : rows) {
    if (key == r.key) return &r;
  }
  return nullptr;
}

std::string OptionTable::key_list() const {
  std::string s;
  for (const PolicyOption& r : rows) s += (s.empty() ? "" : ", ") + std::string(r.key);
  return s;
}

ParsedOptions::ParsedOptions(const OptionTable& table, const PolicyOptions& opts,
                             const AttnShape& shape)
    : table_(table), opts_(opts), shape_(shape) {
  const std::string p = table.policy;
  for (const auto& [key, value] : opts) {
    const PolicyOption* r = table.find(key);
    if (!r && table.rows.empty()) fail("policy '{}' takes no options (got '{}')", p, key);
    if (!r) fail("policy '{}' has no option '{}' (options: {})", p, key, table.key_list());
    int i = 0;
    double x = 0.0;
    bool ok = true;
    switch (r->type) {
      case OptionType::Budget: parse_budget(p, value); break;
      case OptionType::Count: ok = to_count(value, &i); break;
      case OptionType::Whole: ok = to_whole(value, r->lo, r->hi, &i); break;
      case OptionType::Number: ok = to_number(value, &x); break;
      case OptionType::Fraction: ok = to_fraction(value, &x); break;
      case OptionType::OnOff: ok = value == "on" || value == "off"; break;
      case OptionType::Enum: {
        const std::vector<std::string> c = choices(*r);
        ok = std::find(c.begin(), c.end(), value) != c.end();
        break;
      }
      case OptionType::Text:
        if (r->rule && value.empty()) fail("policy '{}': {} must {}", p, key, r->rule);
        break;
      case OptionType::LayerSet: parse_layers(p, key, value, shape); break;
    }
    if (!ok) fail_rule(key);
  }
  for (const PolicyOption& r : table.rows) {
    if (r.fallback) continue;
    const auto it = opts.find(r.key);
    if (it != opts.end() && !it->second.empty()) continue;
    if (r.missing) fail("policy '{}' {}", p, r.missing);
    FASA_CHECK(r.type == OptionType::Budget);
    fail("policy '{}' needs a budget (e.g. --policy {}:budget=256)", p, p);
  }
}

void ParsedOptions::fail_rule(const std::string& key) const {
  const PolicyOption* r = table_.find(key);
  FASA_CHECK(r && given(key));
  fail("policy '{}': {} must {} (got '{}')", table_.policy, key, rule_of(*r, shape_),
       opts_.at(key));
}

const PolicyOption& ParsedOptions::row(const std::string& key, OptionType a, OptionType b) const {
  const PolicyOption* r = table_.find(key);
  FASA_CHECK(r && (r->type == a || r->type == b));
  FASA_CHECK(given(key) || (r->fallback && !r->computed));  // a computed default is the policy's
  return *r;
}

std::string ParsedOptions::value_or_default(const PolicyOption& r) const {
  const auto it = opts_.find(r.key);
  return it != opts_.end() ? it->second : std::string(r.fallback);
}

double ParsedOptions::budget(const std::string& key) const {
  return parse_budget(table_.policy,
                      value_or_default(row(key, OptionType::Budget, OptionType::Budget)));
}

int ParsedOptions::count(const std::string& key) const {
  const PolicyOption& r = row(key, OptionType::Count, OptionType::Whole);
  int i = 0;
  const std::string v = value_or_default(r);
  FASA_CHECK(r.type == OptionType::Count ? to_count(v, &i) : to_whole(v, r.lo, r.hi, &i));
  return i;
}

double ParsedOptions::number(const std::string& key) const {
  const PolicyOption& r = row(key, OptionType::Number, OptionType::Fraction);
  double x = 0.0;
  const std::string v = value_or_default(r);
  FASA_CHECK(r.type == OptionType::Number ? to_number(v, &x) : to_fraction(v, &x));
  return x;
}

bool ParsedOptions::on(const std::string& key) const {
  return value_or_default(row(key, OptionType::OnOff, OptionType::OnOff)) == "on";
}

std::string ParsedOptions::text(const std::string& key) const {
  return value_or_default(row(key, OptionType::Enum, OptionType::Text));
}

std::set<int> ParsedOptions::layers(const std::string& key) const {
  const PolicyOption& r = row(key, OptionType::LayerSet, OptionType::LayerSet);
  const auto it = opts_.find(r.key);
  if (it != opts_.end()) return parse_layers(table_.policy, key, it->second, shape_);
  return default_layers(r.fallback, shape_);
}

std::string options_markdown(const OptionTable& t) {
  if (t.rows.empty()) return "none";
  std::string s;
  for (const PolicyOption& r : t.rows) {
    std::string value = r.value;
    for (size_t at = value.find('|'); at != std::string::npos; at = value.find('|', at + 2)) {
      value.replace(at, 1, "\\|");
    }
    s += fmt::format("{}`{}={}` ({})", s.empty() ? "" : ", ", r.key, value,
                     r.fallback ? r.fallback : "required");
  }
  return s;
}

std::string options_help(const OptionTable& t, int indent) {
  std::string s;
  for (const PolicyOption& r : t.rows) {
    s += fmt::format("{:{}}{}={} ({}): {}\n", "", indent, r.key, r.value,
                     r.fallback ? r.fallback : "required", r.help);
  }
  return s;
}

}  // namespace fasa
