#include "fasa/attention/prefill_observers.h"

#include "fasa/core/error.h"

namespace fasa {

PrefillObservers::PrefillObservers(std::vector<std::unique_ptr<AttentionPolicy>> members)
    : members_(std::move(members)) {
  for (size_t i = 0; i < members_.size(); ++i) {
    AttentionPolicy& m = *members_[i];
    observers_.push_back(facet<PrefillObserver>(m));
    rewinds_.push_back(facet<Rewindable>(m));
    if (!observers_.back()) {
      fail("prefill observers: policy '{}' does not learn from the prefill", m.name());
    }
    if (facet<TieredPolicy>(m)) {
      fail("prefill observers: policy '{}' needs its own cache layout", m.name());
    }
    for (size_t j = 0; j < i; ++j) {
      if (members_[j]->name() == m.name()) {
        fail("prefill observers: policy '{}' is watched twice", m.name());
      }
    }
  }
}

void PrefillObservers::on_append(const KvCache& cache, int layer, int first_slot, int n) {
  for (auto& m : members_) m->on_append(cache, layer, first_slot, n);
}

void PrefillObservers::on_prefill_queries(const KvCache& cache, int layer, int first_slot,
                                          int n_tok, const float* q) {
  for (PrefillObserver* o : observers_) o->on_prefill_queries(cache, layer, first_slot, n_tok, q);
}

void PrefillObservers::copy_prefill_state_from(const AttentionPolicy& src) {
  fail("prefill observers only gather prefill statistics; they cannot take '{}''s", src.name());
}

const AttentionPolicy* PrefillObservers::member(std::string_view name) const {
  for (const auto& m : members_) {
    if (m->name() == name) return m.get();
  }
  return nullptr;
}

void PrefillObservers::save_point() {
  for (Rewindable* r : rewinds_) {
    if (r) r->save_point();
  }
}

void PrefillObservers::rollback(const KvCache& cache, int n) {
  for (Rewindable* r : rewinds_) {
    if (r) r->rollback(cache, n);
  }
}

uint64_t PrefillObservers::resident_bytes() const {
  uint64_t b = 0;
  for (const auto& m : members_) b += m->resident_bytes();
  return b;
}

const AttentionPolicy* prefill_state_source(const AttentionPolicy& state, std::string_view name) {
  if (const auto* observers = dynamic_cast<const PrefillObservers*>(&state)) {
    return observers->member(name);
  }
  return name == state.name() ? &state : nullptr;
}

}  // namespace fasa
