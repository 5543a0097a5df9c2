// The one extension point for KV-cache methods. The model computes q, k, v and calls the
// attention driver; the driver asks the sequence's policy which cache slots each kv-head group
// reads at a decode step. Policies exchange slot indices only (no devices, no model types).
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
  // Policies that learn from attention probabilities (H2O, SnapKV) return true and get
  // on_probs for every query head after each decode step.
  virtual bool wants_probs() const { return false; }
  // Bytes of side data the policy keeps in memory (e.g. FASA's packed key slice).
  virtual uint64_t resident_bytes() const { return 0; }
  // Eviction policies (streaming, h2o, snapkv, pyramidkv): how many rows of the cache, one per
  // (global layer, kv head, slot), this policy has evicted for good as of its last decode step.
  // Policies that may still read every row return 0.
  virtual uint64_t evicted_rows() const { return 0; }
  // The same, slot by slot, for (global layer, kv_head): sets *horizon and `kept` (ascending)
  // so that every slot below *horizon not in `kept` is gone for good: no later step of the
  // sequence reads it, neither a decode step nor a later prefill (whose dense attention then
  // reads only what is kept, as an evicting cache would). The session frees those rows after
  // each decode step (KvCache::evict), and from then on every reader finds rows through
  // KvCache::rows_of. Returns false (nothing evicted) by default.
  virtual bool kept_slots(int layer, int kv_head, int* horizon, std::vector<int32_t>* kept) const {
    return false;
  }
  // The cache layout the policy needs, or null for the plain in-RAM cache. Asked once, when
  // the session creates its cache (FASA-M keeps only its key slice in RAM).
  virtual const KvTiering* tiering() const { return nullptr; }
  virtual void on_probs(int layer, int head, const Selection& sel, const float* probs, int n) {}

  // Lossless decoding (engine/lossless.h) drafts tokens with the policy, then takes them back:
  // save_point() while the cache holds n slots, then decode steps, then rollback(cache, n) after
  // the cache was cut back to n slots (KvCache::truncate; rows [0, n) unchanged, rows from n on
  // will be written again). The policy must then be exactly as it was at save_point(): a policy
  // whose state follows the rows (packed slices, page boxes) forgets the rows >= n; one that
  // learns from decode steps (H2O's scores, SnapKV's votes) restores what it saved. One save
  // point at a time; a rollback to it may follow any number of decode steps.
  virtual void save_point() {}
  virtual void rollback(const KvCache& cache, int n) {}

  // Prefill-aware policies (SnapKV's observation window, H2O's accumulated attention) return
  // true and get each dense prefill chunk's queries: on_prefill_queries after the chunk's keys
  // are stored (slots [first_slot, first_slot + n_tok) of `layer`, every kv head; not committed
  // yet, so read them through k_rows, not n_used). Global layers only, chunks in order. The
  // driver does nothing more for policies that return false.
  virtual bool wants_prefill_queries() const { return false; }
  // q: [n_tok, n_heads, head_dim] post-RoPE, exactly what the chunk's attention used.
  virtual void on_prefill_queries(const KvCache& cache, int layer, int first_slot, int n_tok,
                                  const float* q) {}
  // Prefix forking (Session::copy_prefix_from): a policy that wants prefill queries takes the
  // budget-independent statistics it gathered over the prefill from `src`, a policy of the same
  // name that saw the same dense prefill and no decode step yet (so one dense prefill serves
  // several budgets of one policy). Throws fasa::Error otherwise. Policies that do not want
  // prefill queries keep nothing from prefill and inherit this no-op.
  virtual void copy_prefill_state_from(const AttentionPolicy& src) {}
  // The policy whose prefill statistics a policy named `name` would take from this one (for
  // copy_prefill_state_from), or null: this policy itself when the names match. A policy that
  // watches a prefill for others (PrefillObservers) answers with the member of that name.
  virtual const AttentionPolicy* prefill_state_source(std::string_view name) const {
    return name == this->name() ? this : nullptr;
  }
  // A policy that wants prefill queries but can do without them returns false: a prefix that
  // comes without them (a saved prompt cache, a synthetic fill, a copy of another policy's
  // session) is then not refused, and the policy makes do (calib=online calibrates from its
  // first decode steps instead).
  virtual bool needs_prefill_queries() const { return wants_prefill_queries(); }
  // Online calibration (calib=online): what the policy did so far; null for every other policy.
  virtual const OnlineCalibrationInfo* online_calibration() const { return nullptr; }
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
