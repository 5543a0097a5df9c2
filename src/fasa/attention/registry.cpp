#include "fasa/attention/registry.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/core/parallel.h"

namespace fasa {

const std::vector<PolicyEntry>& policy_entries() {
  static const std::vector<PolicyEntry> kEntries = {
      {"full", "dense attention over every cached token", make_full_policy, full_options},
      {"oracle", "exact top-B of the full attention logits", make_oracle_policy, oracle_options},
      {"fasa", "FASA: calibrated dominant-FC token selection (variant c or m)", make_fasa_policy,
       fasa_options},
      {"streaming", "StreamingLLM: the first sinks= slots and the newest ones",
       make_streaming_policy, streaming_options},
      {"quest", "Quest: pages ranked by their key min/max bound of q.k", make_quest_policy,
       quest_options},
      {"sparq",
       "SparQ: r largest |q| dims approximate the scores, top-B per query head, "
       "mean-value reallocation",
       make_sparq_policy, sparq_options},
      {"double-sparsity", "Double Sparsity: calibrated heavy channels score tokens",
       make_double_sparsity_policy, double_sparsity_options},
      {"snapkv", "SnapKV: observation-window votes keep prompt slots", make_snapkv_policy,
       snapkv_options},
      {"pyramidkv", "PyramidKV: SnapKV's votes, per-layer budgets falling bottom to top",
       make_pyramidkv_policy, pyramidkv_options},
      {"h2o", "H2O: newest slots + heavy hitters by accumulated attention", make_h2o_policy,
       h2o_options},
      {"pyramidkv+fasa", "PyramidKV evicts to keep= slots, FASA-C picks budget= of them per step",
       make_pyramidkv_fasa_policy, pyramidkv_fasa_options},
  };
  return kEntries;
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const auto& e : policy_entries()) names.emplace_back(e.name);
  return names;
}

bool policy_takes_calibration(const std::string& name) {
  for (const auto& e : policy_entries()) {
    if (name == e.name) return e.options().find("calib") != nullptr;
  }
  return false;
}

const OptionTable& policy_option_table(const std::string& name) {
  for (const auto& e : policy_entries()) {
    if (name == e.name) return e.options();
  }
  fail("unknown attention policy '{}'", name);
}

std::string policy_help() {
  std::string s;
  for (const auto& e : policy_entries()) {
    s += fmt::format("{}: {}\n{}", e.name, e.summary, options_help(e.options(), 2));
  }
  if (!s.empty()) s.pop_back();  // the last newline
  return s;
}

std::unique_ptr<AttentionPolicy> make_policy(const std::string& name, const PolicyContext& ctx,
                                             const PolicyOptions& opts) {
  for (const auto& e : policy_entries()) {
    if (name == e.name) return e.make(ctx, opts);
  }
  std::string known, pairs;
  for (const auto& n : policy_names()) {
    std::string& list = n.find('+') == std::string::npos ? known : pairs;
    list += (list.empty() ? "" : ", ") + n;
  }
  if (name.find('+') != std::string::npos) {
    fail("policy combination '{}' is not supported (supported: {})", name, pairs);
  }
  fail("unknown attention policy '{}' (known: {})", name, known);
}

void AttentionPolicy::select_layer(const AttnQuery* qs, int n, Selection* outs) {
  parallel_for(n, [&](int64_t g) { select(qs[g], outs[g]); });
}

namespace {

// Per-head lists of many heads: each slot counts where no earlier head's list has it.
int distinct_by_search(const Selection& se, int n_group) {
  int n = 0;
  for (int g = 0; g < n_group; ++g) {
    for (int32_t slot : se.head_slots[g]) {
      bool seen = false;
      for (int h = 0; h < g && !seen; ++h) {
        seen = std::binary_search(se.head_slots[h].begin(), se.head_slots[h].end(), slot);
      }
      n += seen ? 0 : 1;
    }
  }
  return n;
}

}  // namespace

int distinct_slots(const Selection& se, int n_group, int n_visible) {
  if (se.all) return n_visible;
  if (!se.per_head || n_group == 1) return static_cast<int>(se.slots_for(0).size());
  constexpr int kMaxMerge = 64;  // heads merged with cursors on the stack (no allocation)
  if (n_group > kMaxMerge) return distinct_by_search(se, n_group);
  std::array<size_t, kMaxMerge> at{};  // [n_group] each head's next list index
  int n = 0;
  for (;;) {  // merge the sorted lists, counting each smallest slot once
    int32_t low = INT32_MAX;
    for (int g = 0; g < n_group; ++g) {
      const auto& l = se.head_slots[g];
      if (at[g] < l.size()) low = std::min(low, l[at[g]]);
    }
    if (low == INT32_MAX) return n;
    n += 1;
    for (int g = 0; g < n_group; ++g) {
      const auto& l = se.head_slots[g];
      if (at[g] < l.size() && l[at[g]] == low) at[g] += 1;
    }
  }
}

void sorted_union(const std::vector<std::vector<int32_t>>& lists, std::vector<int32_t>* out) {
  out->clear();
  if (lists.size() == 1) {
    *out = lists[0];
    return;
  }
  for (const auto& l : lists) out->insert(out->end(), l.begin(), l.end());
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
}

int resolve_budget(double budget, int n_visible) {
  const double k = budget < 1.0 ? std::ceil(budget * n_visible) : std::floor(budget);
  return static_cast<int>(std::clamp(k, 1.0, static_cast<double>(n_visible)));
}

double parse_budget(const std::string& policy, const std::string& value) {
  char* end = nullptr;
  const double b = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(b) || b <= 0.0) {
    fail("policy '{}': budget must be a positive number of tokens or a fraction < 1 (got '{}')",
         policy, value);
  }
  if (b >= 1.0 && b != std::floor(b)) {
    fail("policy '{}': a budget >= 1 must be a whole number of tokens (got '{}')", policy, value);
  }
  return b;
}

std::string policy_spec(const std::string& name, const PolicyOptions& opts) {
  std::string s = name;
  for (const auto& [key, value] : opts) {
    s.append(s.size() == name.size() ? ":" : ",").append(key).append("=").append(value);
  }
  return s;
}

void parse_policy_spec(const std::string& spec, std::string* name, PolicyOptions* opts) {
  const size_t colon = spec.find(':');
  *name = spec.substr(0, colon);
  opts->clear();
  if (colon == std::string::npos) return;
  std::string rest = spec.substr(colon + 1);
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t comma = rest.find(',', start);
    const std::string kv =
        rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      fail("bad policy option '{}' in '{}' (expected key=value)", kv, spec);
    }
    (*opts)[kv.substr(0, eq)] = kv.substr(eq + 1);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

}  // namespace fasa
