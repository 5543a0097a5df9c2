// One dense prefill for many policy settings (eval tasks/sweep, eval ppl --decode, eval recall).
// Decode-time policies start from a copy of it. Prefill-aware ones (SnapKV, PyramidKV, H2O)
// take their prefill statistics from PrefillObservers (attention/prefill_observers.h) that
// watched it: the first spec of each such policy name is watched, keyed by its options other
// than the budget. A later spec of a watched name with other prefill options (another
// observation window), or one that needs its own cache layout, prefills itself.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/policy.h"

namespace fasa {

class SharedPrefill {
 public:
  // Makes each spec's policy once to ask what it needs; throws fasa::Error for a bad spec.
  SharedPrefill(const std::vector<std::string>& specs, const PolicyContext& ctx);

  // Whether setting p ([0, n_specs)) starts from the shared dense prefill.
  bool via_dense(size_t p) const { return via_dense_[p]; }
  // Whether setting p may start from a copy of setting q's prefilled session: always for a
  // decode-time policy (the prefix is dense either way), and for a prefill-aware one when q is
  // the same policy with the same options other than the budget.
  bool can_copy(size_t p, size_t q) const { return keys_[p].empty() || keys_[p] == keys_[q]; }
  // Whether the dense prefill is watched for any setting.
  bool watching() const { return !watched_.empty(); }
  // Fresh observers for one prompt's dense prefill (one per prompt: the statistics are that
  // prompt's), or null when nothing is watched (plain full attention then).
  std::unique_ptr<AttentionPolicy> make_observers() const;

 private:
  PolicyContext ctx_;
  std::vector<std::string> watched_;  // specs the observers watch for
  std::vector<bool> via_dense_;       // [n_specs]
  std::vector<std::string> keys_;     // [n_specs] prefill-aware: name + options but budget
};

}  // namespace fasa
