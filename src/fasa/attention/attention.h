// The attention driver: the only attention entry point the model calls. Prefill chunks attend
// densely and causally; single-token decode steps read the slots the sequence's policy selects.
#pragma once

#include <cstdint>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policy_facets.h"

namespace fasa {

struct AttnStep {
  int layer = 0;
  int n_tok = 0;
  int first_slot = 0;            // new tokens are at slots [first_slot, first_slot + n_tok)
  const int32_t* pos = nullptr;  // [n_tok] positions of the new tokens
  const float* q = nullptr;      // [n_tok, n_heads, head_dim] post-RoPE
  float* out = nullptr;          // [n_tok, n_heads, head_dim]
};

// Every AttnStats counter, once: X(name, what it counts). The struct's fields, operator+=,
// operator- and AttnStats::fields (for writers of every counter) all come from this list.
#define FASA_ATTN_STATS(X)                                                                       \
  X(decode_tokens, "single-token decode steps")                                                  \
  X(decode_steps, "(layer, query head) decode attentions run")                                   \
  /* Rows per (layer, kv-head group), each distinct row once: a row two query heads of a     */  \
  /* group read (per-head selections) is one row read from memory.                           */  \
  X(slots_read, "distinct K/V rows they read, per kv-head group")                                \
  X(slots_visible, "rows dense attention would have read, per kv-head group")                    \
  /* Of slots_read (and slots_visible): the rows sliding-window layers read (their window,   */  \
  /* dense, no policy). slots_read - window_slots is the global layers' (policy) part.        */ \
  X(window_slots, "of slots_read and slots_visible: the sliding-window layers' rows")            \
  /* Bytes per kv-head group: each distinct row of the group's selection once (a shared list, */ \
  /* or the union of the per-head lists).                                                     */ \
  X(select_bytes, "read by policies to choose (TIP, oracle scoring)")                            \
  X(attend_bytes, "K and V rows read by attention over the selection")                           \
  X(dense_bytes, "K and V rows dense attention would have read")                                 \
  X(window_bytes, "of attend_bytes and dense_bytes: the sliding-window layers'")                 \
  X(dense_fallbacks,                                                                             \
    "of decode_steps: dense because selecting would not pay "                                    \
    "(Selection::dense_fallback)")                                                               \
  /* Decode steps' reads from a file-backed KV tier (FASA-M) as the device delivered them    */  \
  /* (whole blocks); attend_bytes counts the rows themselves, whichever tier held them.       */ \
  X(tier_reads, "file tier: reads")                                                              \
  X(tier_read_bytes, "file tier: bytes read")                                                    \
  X(tier_read_ns, "file tier: time reading")                                                     \
  X(tier_prefetch_bytes, "of those: the background reads' bytes (prefetch)")                     \
  X(tier_prefetch_rows, "the rows the background reads fetched")                                 \
  X(tier_prefetch_hits, "the prefetched rows a decode step then found")                          \
  X(tier_rows, "file tier: rows asked for")                                                      \
  X(tier_cache_hits, "of tier_rows: found in the RAM row cache (no device read)")

struct AttnStats {
#define FASA_ATTN_STAT_FIELD(name, what) uint64_t name = 0;
  FASA_ATTN_STATS(FASA_ATTN_STAT_FIELD)
#undef FASA_ATTN_STAT_FIELD

  // Every counter summed (merging runs).
  AttnStats& operator+=(const AttnStats& o) {
#define FASA_ATTN_STAT_ADD(name, what) name += o.name;
    FASA_ATTN_STATS(FASA_ATTN_STAT_ADD)
#undef FASA_ATTN_STAT_ADD
    return *this;
  }
  // Every counter's difference (what a stretch of a run added: after - before).
  AttnStats operator-(const AttnStats& before) const {
    AttnStats d;
#define FASA_ATTN_STAT_SUB(name, what) d.name = name - before.name;
    FASA_ATTN_STATS(FASA_ATTN_STAT_SUB)
#undef FASA_ATTN_STAT_SUB
    return d;
  }

  struct Field {
    const char* name;
    uint64_t AttnStats::*member;
    const char* what;
  };
  // Every counter in list order, for writers that name them all (JSON, tests).
  static const std::vector<Field>& fields();

  uint64_t bytes_read() const { return select_bytes + attend_bytes; }
  // Share of the cached rows the global (policy-driven) layers read at decode steps: 1 when
  // there were none.
  double global_read_fraction() const {
    const uint64_t visible = slots_visible - window_slots;
    return visible ? static_cast<double>(slots_read - window_slots) / visible : 1.0;
  }
};

inline const std::vector<AttnStats::Field>& AttnStats::fields() {
#define FASA_ATTN_STAT_ROW(name, what) Field{#name, &AttnStats::name, what},
  static const std::vector<Field> kFields = {FASA_ATTN_STATS(FASA_ATTN_STAT_ROW)};
#undef FASA_ATTN_STAT_ROW
  return kFields;
}

// K/V of the new tokens must already be stored in `cache` for this layer. A decode step asks
// policy.core for its slots and hands the probabilities to policy.probs; a prefill chunk's
// queries go to policy.prefill.
void attention_forward(const AttnStep& step, const KvCache& cache, const PolicyFacets& policy,
                       AttnStats* stats);

}  // namespace fasa
