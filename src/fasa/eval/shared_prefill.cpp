#include "fasa/eval/shared_prefill.h"

#include <chrono>
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
    for (const auto& [k, v] : opts) key->append(",").append(k).append("=").append(v);
  }
  return policy;
}

}  // namespace

SharedPrefill::SharedPrefill(std::shared_ptr<const Model> model,
                             const std::vector<std::string>& specs, const SessionOptions& so,
                             const PolicyContext& ctx)
    : model_(std::move(model)),
      specs_(specs),
      so_(so),
      ctx_(ctx),
      via_dense_(specs.size(), true),
      keys_(specs.size()) {
  so_.policy = "full";
  so_.external_policy = nullptr;
  std::map<std::string, std::string, std::less<>> key_of_name;  // watched name -> its key
  for (size_t p = 0; p < specs.size(); ++p) {
    std::string key;
    const auto policy = policy_of(specs[p], ctx_, &key);
    if (!facet<PrefillObserver>(*policy)) continue;
    keys_[p] = key;
    if (facet<TieredPolicy>(*policy)) {
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

std::unique_ptr<Session> SharedPrefill::make_dense_session(AttentionPolicy* observers) const {
  SessionOptions o = so_;
  o.external_policy = observers;
  return std::make_unique<Session>(model_, o, ctx_);
}

std::unique_ptr<Session> SharedPrefill::make_session(size_t p) const {
  SessionOptions o = so_;
  o.policy = specs_[p];
  return std::make_unique<Session>(model_, o, ctx_);
}

PromptPrefill::PromptPrefill(const SharedPrefill& shared, std::vector<int32_t> prefix,
                             Sources sources)
    : shared_(shared),
      prefix_(std::move(prefix)),
      sources_(sources),
      observers_(shared.make_observers()) {
  if (observers_ || sources_ == Sources::Pristine) {
    dense_ = shared_.make_dense_session(observers_.get());
  }
}

void PromptPrefill::start(size_t p, Session& s) {
  Session* src = find_source(p);
  if (src) {
    s.copy_prefix_from(*src);
  } else if (sources_ == Sources::Started) {
    prefill(s);
  } else {  // Pristine: s runs on at once, so the prefill goes to a session kept here
    own_.push_back(shared_.make_session(p));
    prefill(*own_.back());
    copyable_.emplace_back(p, own_.back().get());
    s.copy_prefix_from(*own_.back());
  }
  if (sources_ == Sources::Started) copyable_.emplace_back(p, &s);
}

Session& PromptPrefill::dense() {
  if (!dense_) dense_ = shared_.make_dense_session(observers_.get());
  if (dense_->n_past() == 0) prefill(*dense_);
  return *dense_;
}

// The dense session for a setting it serves, else the first copyable session that fits.
Session* PromptPrefill::find_source(size_t p) {
  if (dense_ && shared_.via_dense(p)) return &dense();
  for (const auto& [q, session] : copyable_) {
    if (shared_.can_copy(p, q)) return session;
  }
  return nullptr;
}

void PromptPrefill::prefill(Session& s) {
  const auto t0 = std::chrono::steady_clock::now();
  s.prefill(prefix_);
  prefill_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  n_prefills_ += 1;
}

}  // namespace fasa
