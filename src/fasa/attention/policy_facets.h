// The optional capabilities of an attention policy, one small interface each (the list, and what
// a policy without each one means: Facet in policy.h). A policy implements a facet by inheriting
// its interface; callers find it with facet<F>(policy), or every facet at once with
// PolicyFacets, when they get the policy, and keep the pointers (null: the policy lacks it).
#pragma once

#include <cstdint>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policy.h"

namespace fasa {

// Learns from the attention probabilities of its decode steps (H2O's accumulated attention).
class ProbabilityObserver {
 public:
  static constexpr Facet kFacet = Facet::Probs;
  // After each decode step, for every query head: probs [n], the softmax over the slots the head
  // read (sel.slots_for(head % n_group); slots [0, n) when sel.all).
  virtual void on_probs(int layer, int head, const Selection& sel, const float* probs, int n) = 0;

 protected:
  ~ProbabilityObserver() = default;
};

// Learns from the queries of the dense prefill (SnapKV's observation window, H2O's accumulated
// attention, calib=online's query window).
class PrefillObserver {
 public:
  static constexpr Facet kFacet = Facet::Prefill;
  // Each dense prefill chunk's queries, after the chunk's keys are stored (slots [first_slot,
  // first_slot + n_tok) of `layer`, every kv head; not committed yet, so read them through
  // k_rows, not n_used). Global layers only, chunks in order.
  // q: [n_tok, n_heads, head_dim] post-RoPE, exactly what the chunk's attention used.
  virtual void on_prefill_queries(const KvCache& cache, int layer, int first_slot, int n_tok,
                                  const float* q) = 0;
  // Prefix forking (Session::copy_prefix_from): takes the budget-independent statistics gathered
  // over the prefill from `src` (prefill_state_source, prefill_observers.h: a policy of the same
  // name that saw the same dense prefill and no decode step yet), so one dense prefill serves
  // several budgets of one policy. A policy that needs the statistics throws fasa::Error for any
  // other `src`.
  virtual void copy_prefill_state_from(const AttentionPolicy& src) = 0;
  // A policy that can do without the prefill queries returns false: a prefix that comes without
  // them (a saved prompt cache, a synthetic fill, a copy of another policy's session) is then
  // not refused, and the policy makes do (calib=online calibrates from its first decode steps).
  virtual bool needs_prefill_queries() const { return true; }

 protected:
  ~PrefillObserver() = default;
};

// Evicts cache rows for good (streaming, SnapKV, PyramidKV, H2O).
class EvictingPolicy {
 public:
  static constexpr Facet kFacet = Facet::Eviction;
  // How many rows of the cache, one per (global layer, kv head, slot), it has evicted for good
  // as of its last decode step.
  virtual uint64_t evicted_rows() const = 0;
  // The same, slot by slot, for (global layer, kv_head): sets *horizon and `kept` (ascending)
  // so that every slot below *horizon not in `kept` is gone for good: no later step of the
  // sequence reads it, neither a decode step nor a later prefill (whose dense attention then
  // reads only what is kept, as an evicting cache would). The session frees those rows after
  // each decode step (KvCache::evict), and from then on every reader finds rows through
  // KvCache::rows_of. Returns false while nothing is evicted.
  virtual bool kept_slots(int layer, int kv_head, int* horizon,
                          std::vector<int32_t>* kept) const = 0;

 protected:
  ~EvictingPolicy() = default;
};

// Needs a cache laid out in tiers (FASA-M keeps only its key slice in RAM).
class TieredPolicy {
 public:
  static constexpr Facet kFacet = Facet::Tiering;
  // The layout; asked once, when the session creates its cache.
  virtual const KvTiering& tiering() const = 0;

 protected:
  ~TieredPolicy() = default;
};

// Lossless decoding (engine/lossless.h) drafts tokens with the policy, then takes them back:
// save_point() while the cache holds n slots, then decode steps, then rollback(cache, n) after
// the cache was cut back to n slots (KvCache::truncate; rows [0, n) unchanged, rows from n on
// will be written again). The policy must then be exactly as it was at save_point(): a policy
// whose state follows the rows (packed slices, page boxes) forgets the rows >= n; one that
// learns from decode steps (H2O's scores, SnapKV's votes) restores what it saved. One save
// point at a time; a rollback to it may follow any number of decode steps.
class Rewindable {
 public:
  static constexpr Facet kFacet = Facet::Rewind;
  virtual void save_point() = 0;
  virtual void rollback(const KvCache& cache, int n) = 0;

 protected:
  ~Rewindable() = default;
};

// What an online-calibrated policy (calib=online) did: reported by run, bench, eval and serve.
class QueryWindow;  // online_calibration.h
struct OnlineCalibrationInfo {
  int window = 0;                // queries per global layer it calibrates from (calib_window)
  bool done = false;             // the calibration is made (at the first decode step that could)
  bool reused = false;           // taken from a copied prefix (prompt cache, a shared prefill)
  bool from_decode = false;      // from decode-step queries: no prefill was seen
  int queries = 0;               // queries per layer it was made from
  double seconds = 0.0;          // time to make it (0 when reused)
  int refreshes = 0;             // times it was made again from the newest decode queries
  double refresh_seconds = 0.0;  // their time, all together (part of the decode steps' time)
  uint64_t window_bytes = 0;     // memory the kept queries took
  // The prompt queries it keeps to calibrate from, until it has calibrated (null after, and
  // while it collects decode-step queries): what a prompt-cache file saves with the rows.
  const QueryWindow* prompt_queries = nullptr;
};

// Calibrates on the prompt it answers (calib=online).
class OnlineCalibrationReport {
 public:
  static constexpr Facet kFacet = Facet::OnlineCalibration;
  // What it did so far; lives as long as the policy.
  virtual const OnlineCalibrationInfo& online_calibration() const = 0;

 protected:
  ~OnlineCalibrationReport() = default;
};

// Facet F of policy p (F one of the interfaces above), or null where p lacks it.
template <class F>
F* facet(AttentionPolicy& p) {
  F* f = dynamic_cast<F*>(&p);
  return f && p.offers(F::kFacet) ? f : nullptr;
}
template <class F>
const F* facet(const AttentionPolicy& p) {
  const F* f = dynamic_cast<const F*>(&p);
  return f && p.offers(F::kFacet) ? f : nullptr;
}

// A policy and its facets, looked up once (when a session gets its policy) and kept: what the
// attention driver, the session and the engine call. A facet the policy lacks is null, and the
// accessors answer for it as policy.h's Facet says.
struct PolicyFacets {
  PolicyFacets() = default;
  explicit PolicyFacets(AttentionPolicy& p)
      : core(&p),
        probs(facet<ProbabilityObserver>(p)),
        prefill(facet<PrefillObserver>(p)),
        eviction(facet<EvictingPolicy>(p)),
        tiered(facet<TieredPolicy>(p)),
        rewind(facet<Rewindable>(p)),
        online(facet<OnlineCalibrationReport>(p)) {}

  AttentionPolicy* core = nullptr;
  ProbabilityObserver* probs = nullptr;
  PrefillObserver* prefill = nullptr;
  EvictingPolicy* eviction = nullptr;
  const TieredPolicy* tiered = nullptr;
  Rewindable* rewind = nullptr;
  const OnlineCalibrationReport* online = nullptr;

  bool needs_prefill_queries() const { return prefill && prefill->needs_prefill_queries(); }
  uint64_t evicted_rows() const { return eviction ? eviction->evicted_rows() : 0; }
  const KvTiering* tiering() const { return tiered ? &tiered->tiering() : nullptr; }
  const OnlineCalibrationInfo* online_calibration() const {
    return online ? &online->online_calibration() : nullptr;
  }
};

}  // namespace fasa
