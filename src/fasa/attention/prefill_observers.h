// One dense prefill watched for several prefill-aware policies (SnapKV, PyramidKV, H2O): the
// policy of a session that only prefills. It attends densely, hands every chunk's appends and
// queries to each member, and lets a session of a member's name take that member's prefill
// statistics (Session::copy_prefix_from, via prefill_state_source). A prefill-aware policy's own
// prefill is dense too and its statistics depend only on the queries and keys it is shown, so a
// copy equals what the policy would have gathered itself, bit for bit; then one prefill serves
// the decode-time policies and every prefill-aware one (eval/task_runner.cpp).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "fasa/attention/policy_facets.h"

namespace fasa {

class PrefillObservers final : public AttentionPolicy, public PrefillObserver, public Rewindable {
 public:
  // Members: prefill-aware policies (PrefillObserver) with distinct names and the plain cache
  // layout (no tiering); fasa::Error otherwise.
  explicit PrefillObservers(std::vector<std::unique_ptr<AttentionPolicy>> members);

  std::string_view name() const override { return "prefill-observers"; }
  void on_append(const KvCache& cache, int layer, int first_slot, int n) override;
  // Decode is not what this policy is for; a single-token step (a last prefill chunk of one
  // token) reads every slot, as dense attention does.
  void select(const AttnQuery&, Selection& out) override { out.set_all(); }
  void on_prefill_queries(const KvCache& cache, int layer, int first_slot, int n_tok,
                          const float* q) override;
  // It is a source only: fasa::Error.
  void copy_prefill_state_from(const AttentionPolicy& src) override;
  // The member named `name`, or null.
  const AttentionPolicy* member(std::string_view name) const;
  uint64_t resident_bytes() const override;
  void save_point() override;
  void rollback(const KvCache& cache, int n) override;

 private:
  std::vector<std::unique_ptr<AttentionPolicy>> members_;
  std::vector<PrefillObserver*> observers_;  // [n_members] their PrefillObserver facets
  std::vector<Rewindable*> rewinds_;         // [n_members] their Rewindable facets, or null
};

// The policy whose prefill statistics a policy named `name` takes from `state`
// (PrefillObserver::copy_prefill_state_from), or null: for PrefillObservers its member of that
// name; for any other policy, `state` itself when the names match.
const AttentionPolicy* prefill_state_source(const AttentionPolicy& state, std::string_view name);

}  // namespace fasa
