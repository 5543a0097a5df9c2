// The one extension point for KV-cache methods. The model computes q, k, v and calls the
// attention driver; the driver asks the sequence's policy which cache slots each kv-head group
// reads at a decode step. Policies exchange slot indices only (no devices, no model types).
// AttentionPolicy is the core every policy has; what only some policies do (learn from
// probabilities or prefill queries, evict, ask for a tiered cache, rewind, calibrate online) is
// a facet, an interface of its own (policy_facets.h) that a policy inherits when it has it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/kernels/ops.h"

namespace fasa {

// One decode-step query of one kv-head group.
struct AttnQuery {
  int layer = 0;
  int kv_head = 0;
  const float* q = nullptr;  // [n_group, head_dim] post-RoPE queries of the group's heads
  int n_group = 0;
  int32_t pos = 0;    // position of the query token
  int n_visible = 0;  // slots [0, n_visible) hold keys this query may read
  const KvCache* cache = nullptr;
  // Optional: the only slots the policy may choose from (ascending, in [0, n_visible)); null =
  // every visible slot. Set by a composite policy (pyramidkv+fasa: the slots PyramidKV keeps)
  // for a policy that honours it (fasa); the driver never sets it.
  const int32_t* candidates = nullptr;
  int n_candidates = 0;
};

// Which slots to read. `all` means every visible slot (dense). Otherwise either one slot list
// shared by the group's query heads (`slots`), or, when `per_head` is set, one list per query
// head of the group (`head_slots[g]`, g in [0, n_group)). Every list is sorted, unique and in
// [0, n_visible).
//
// Value mixing (optional, SparQ's mean-value reallocation): when `mix_alpha` is not empty, the
// driver replaces query head g's attention output o_g (over its selected slots) by
//   alpha[g] * o_g + (1 - alpha[g]) * mix_value      (per channel, in float)
// where mix_value ([head_dim], owned by the policy, valid until its next select for this kv
// head) is shared by the group's heads. The driver clears mix_alpha before every select, so a
// policy that never sets it changes nothing (outputs bit-identical to a driver without mixing).
struct Selection {
  bool all = true;
  bool per_head = false;
  std::vector<int32_t> slots;                    // [n_selected]
  std::vector<std::vector<int32_t>> head_slots;  // [n_group][n_selected]
  uint64_t bytes_read = 0;           // bytes the policy itself read to choose (keys, side data)
  std::vector<float> mix_alpha;      // [n_group] value mixing weights; empty = none
  const float* mix_value = nullptr;  // [head_dim] the value mixed in (see above)
  // all = true because selecting would read more than it saves (FASA's break-even), not because
  // the budget covers the context: counted in AttnStats::dense_fallbacks.
  bool dense_fallback = false;
  // Slots ranked just past the budget (ascending; empty unless the policy offers them): a file
  // tier reads them in the background, since the layer's next step is likely to select some
  // (FASA-M's prefetch).
  std::vector<int32_t> next;
  const std::vector<int32_t>& slots_for(int g) const { return per_head ? head_slots[g] : slots; }
  void set_all() {
    all = true;
    per_head = false;
    slots.clear();
    bytes_read = 0;
    mix_alpha.clear();
    dense_fallback = false;
    next.clear();
  }
};

// Rows of one kv-head group (n_group query heads) a selection reads from memory, each row once:
// n_visible when `all`, the list's size for a shared selection, and for per-head selections the
// size of the union of the heads' lists (a row two heads read is one row read).
int distinct_slots(const Selection& se, int n_group, int n_visible);

// out = the union of `lists` (each ascending), ascending, each slot once.
void sorted_union(const std::vector<std::vector<int32_t>>& lists, std::vector<int32_t>* out);

// Budget semantics shared by every selective policy: tokens attended per decode step per
// kv-head group (per query head in per-head mode). A value < 1 is a fraction of the visible
// context. Returns the number of slots to keep (>= 1, <= n_visible).
int resolve_budget(double budget, int n_visible);
// Parses a budget option ("256", "0.1"); throws fasa::Error when not a positive number.
double parse_budget(const std::string& policy, const std::string& value);

// The optional capabilities of a policy beyond the core below, one interface each
// (policy_facets.h). A policy has a facet when its class inherits the facet's interface and
// offers() does not say no; callers look every facet up once, when they get the policy
// (PolicyFacets), and keep the pointer. What a policy without the facet means:
enum class Facet {
  // ProbabilityObserver (on_probs: H2O). None: the driver computes no attention probabilities.
  Probs,
  // PrefillObserver (on_prefill_queries, copy_prefill_state_from, needs_prefill_queries: SnapKV,
  // PyramidKV, H2O, calib=online). None: the driver hands it no prefill queries, a prefix copy
  // takes no prefill statistics into it, and it does not need prefill queries (a saved prompt,
  // a synthetic fill or another policy's prefix serves it). Which policy a copy takes the
  // statistics of is prefill_state_source's answer (prefill_observers.h), for every policy.
  Prefill,
  // EvictingPolicy (evicted_rows, kept_slots: streaming, SnapKV, PyramidKV, H2O). None: it has
  // evicted 0 rows and may read every row again, so the session frees none.
  Eviction,
  // TieredPolicy (the KvTiering it needs: FASA-M). None: the plain in-RAM cache.
  Tiering,
  // Rewindable (save_point, rollback: lossless decoding). None: both do nothing (the policy
  // keeps nothing that a rollback must restore).
  Rewind,
  // OnlineCalibrationReport (calib=online's OnlineCalibrationInfo). None: no report.
  OnlineCalibration,
};

// The core every policy implements: its name, the slots a decode step reads, and the side data
// it keeps from the rows written. Everything else is a facet (above).
class AttentionPolicy {
 public:
  virtual ~AttentionPolicy() = default;
  virtual std::string_view name() const = 0;
  // Slots [first_slot, first_slot + n) of `layer` were just written (all kv heads).
  // Policies see global layers only (shape.global_layers()): a sliding-window layer attends over
  // its window without one, so neither on_append nor select is ever called for it.
  virtual void on_append(const KvCache& cache, int layer, int first_slot, int n) {}
  // Decode step. May be called concurrently for different kv heads of the same layer;
  // never throws.
  virtual void select(const AttnQuery& q, Selection& out) = 0;
  // Decode step of every kv-head group of one layer: outs[g] for qs[g], g in [0, n). The
  // default runs select() for the groups in parallel. A policy whose per-group work is large
  // may split it more finely across threads (FASA: one job per query head, so a few kv heads
  // still keep every thread busy); the results must equal select()'s.
  virtual void select_layer(const AttnQuery* qs, int n, Selection* outs);
  // Bytes of side data the policy keeps in memory (e.g. FASA's packed key slice).
  virtual uint64_t resident_bytes() const { return 0; }
  // Whether the policy has facet f whose interface its class inherits (facet<F>, PolicyFacets):
  // yes by default. A policy whose options decide a facet (fasa's tiering: variant m only) says
  // so here, and so does a wrapper, which inherits every facet it may pass on and offers those
  // of the policy it wraps.
  virtual bool offers(Facet f) const { return true; }
};

using PolicyOptions = std::map<std::string, std::string>;  // "key=value" knobs from the user

// What a policy may know about the model it serves (no model types cross into attention/).
struct PolicyContext {
  AttnShape shape;
  std::string arch;
  RopeLayout rope_layout = RopeLayout::Norm;
  int rope_dim = 0;
  std::function<std::string()> model_sha256;  // identity of the model file, computed on demand
};

// Creates a policy by name ("full", ...). Throws fasa::Error for an unknown name or option.
std::unique_ptr<AttentionPolicy> make_policy(const std::string& name, const PolicyContext& ctx,
                                             const PolicyOptions& opts = {});
std::vector<std::string> policy_names();
// Whether the named policy takes a calibration file (calib=); false for unknown names.
bool policy_takes_calibration(const std::string& name);

// Parses "name" or "name:key=value,key=value" into a name and options.
void parse_policy_spec(const std::string& spec, std::string* name, PolicyOptions* opts);
// The inverse: "name" or "name:key=value,..." (the options in key order).
std::string policy_spec(const std::string& name, const PolicyOptions& opts);

}  // namespace fasa
