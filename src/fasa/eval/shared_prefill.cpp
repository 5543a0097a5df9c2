#include "fasa/eval/shared_prefill.h"

#include <map>

#include "fasa/attention/prefill_observers.h"

namespace fasa {

namespace {

std::unique_ptr<AttentionPolicy> policy_of(const std::string& spec, const PolicyContext& ctx,
                                           std::string* key) {
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  auto policy = make_policy(name, ctx, opts);
  if (key) {
    opts.erase("budget");  // budgets share the prefill statistics; other options may not
    *key = name;
    for (const auto& [k, v] : opts) *key += "," + k + "=" + v;
  }
  return policy;
}

}  // namespace

SharedPrefill::SharedPrefill(const std::vector<std::string>& specs, const PolicyContext& ctx)
    : ctx_(ctx), via_dense_(specs.size(), true), keys_(specs.size()) {
  std::map<std::string, std::string, std::less<>> key_of_name;  // watched name -> its key
  for (size_t p = 0; p < specs.size(); ++p) {
    std::string key;
    const auto policy = policy_of(specs[p], ctx_, &key);
    if (!policy->wants_prefill_queries()) continue;
    keys_[p] = key;
    if (policy->tiering()) {
      via_dense_[p] = false;
      continue;
    }
    auto [it, added] = key_of_name.emplace(std::string(policy->name()), key);
    if (added) {
      watched_.push_back(specs[p]);
    } else if (it->second != key) {
      via_dense_[p] = false;
    }
  }
}

std::unique_ptr<AttentionPolicy> SharedPrefill::make_observers() const {
  if (watched_.empty()) return nullptr;
  std::vector<std::unique_ptr<AttentionPolicy>> members;
  for (const std::string& spec : watched_) members.push_back(policy_of(spec, ctx_, nullptr));
  return std::make_unique<PrefillObservers>(std::move(members));
}

}  // namespace fasa
