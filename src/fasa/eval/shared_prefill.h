// One dense prefill for many policy settings (eval tasks/sweep, eval ppl --decode, eval recall).
// Decode-time policies start from a copy of it. Prefill-aware ones (SnapKV, PyramidKV, H2O)
// take their prefill statistics from PrefillObservers (attention/prefill_observers.h) that
// watched it: the first spec of each such policy name is watched, keyed by its options other
// than the budget. A later spec of a watched name with other prefill options (another
// observation window), or one that needs its own cache layout, prefills itself; the settings
// after it with the same options copy that prefill instead.
//
//   const SharedPrefill shared(model, specs, so, ctx);       // once per run
//   PromptPrefill prompt(shared, tokens, Sources::...);      // once per prompt
//   for (p ...) prompt.start(p, session_of_setting_p);       // in setting order
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fasa/attention/policy.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"

namespace fasa {

class SharedPrefill {
 public:
  // Makes each spec's policy once to ask what it needs; throws fasa::Error for a bad spec.
  // `so`: the sessions' options (context, KV type, prefill chunk); its policy is ignored.
  SharedPrefill(std::shared_ptr<const Model> model, const std::vector<std::string>& specs,
                const SessionOptions& so, const PolicyContext& ctx);

  size_t n_settings() const { return specs_.size(); }
  // Whether setting p ([0, n_settings)) starts from the shared dense prefill.
  bool via_dense(size_t p) const { return via_dense_[p]; }
  // Whether setting p may start from a copy of setting q's prefilled session: always for a
  // decode-time policy (the prefix is dense either way), and for a prefill-aware one when q is
  // the same policy with the same options other than the budget.
  bool can_copy(size_t p, size_t q) const { return keys_[p].empty() || keys_[p] == keys_[q]; }
  // Fresh observers for one prompt's dense prefill (one per prompt: the statistics are that
  // prompt's), or null when nothing is watched (plain full attention then).
  std::unique_ptr<AttentionPolicy> make_observers() const;
  // A fresh session: full attention under `observers` (may be null), or setting p's policy.
  std::unique_ptr<Session> make_dense_session(AttentionPolicy* observers) const;
  std::unique_ptr<Session> make_session(size_t p) const;

 private:
  std::shared_ptr<const Model> model_;
  std::vector<std::string> specs_;  // [n_settings]
  SessionOptions so_;
  PolicyContext ctx_;
  std::vector<std::string> watched_;  // specs the observers watch for
  std::vector<bool> via_dense_;       // [n_settings]
  std::vector<std::string> keys_;     // [n_settings] prefill-aware: name + options but budget
};

// One prompt's prefix, given to each setting's fresh session in setting order. A session starts
// from a copy of a source (Session::copy_prefix_from: exactly the state its own prefill would
// give) or, when no source fits, prefills. The sources are the dense session (prefilled when a
// setting first needs it) and, per `Sources`, the settings' sessions or pristine ones kept here.
class PromptPrefill {
 public:
  enum class Sources {
    // Every started session stays as it is until the last setting has started (eval ppl, eval
    // recall): a later setting may copy it, and one that prefills does so in its own session.
    // A dense session is made only when something is watched, or when dense() asks for one.
    Started,
    // Each started session runs on before the next starts (eval tasks): a dense session always
    // serves, and a setting that prefills does so in a pristine session kept here for the
    // settings after it.
    Pristine,
  };

  PromptPrefill(const SharedPrefill& shared, std::vector<int32_t> prefix, Sources sources);

  // Gives setting p's fresh session (its policy is setting p's) the prefix.
  void start(size_t p, Session& s);
  // The dense session, prefilled (made first if there is none): eval recall's reference.
  Session& dense();
  int n_prefills() const { return n_prefills_; }         // prefills run so far
  double prefill_seconds() const { return prefill_s_; }  // their time

 private:
  Session* find_source(size_t p);
  void prefill(Session& s);

  const SharedPrefill& shared_;
  const std::vector<int32_t> prefix_;  // [n_prefix]
  const Sources sources_;
  std::unique_ptr<AttentionPolicy> observers_;         // null when nothing is watched
  std::unique_ptr<Session> dense_;                     // full attention under observers_, or null
  std::vector<std::pair<size_t, Session*>> copyable_;  // (setting, session) in setting order
  std::vector<std::unique_ptr<Session>> own_;          // Pristine: sessions prefilled here
  int n_prefills_ = 0;
  double prefill_s_ = 0.0;
};

}  // namespace fasa
