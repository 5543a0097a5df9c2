// The attention driver: the only attention entry point the model calls. Prefill chunks attend
// densely and causally; single-token decode steps read the slots the sequence's policy selects.
#pragma once

#include <cstdint>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policy.h"

namespace fasa {

struct AttnStep {
  int layer = 0;
  int n_tok = 0;
  int first_slot = 0;          // new tokens are at slots [first_slot, first_slot + n_tok)
  const int32_t* pos = nullptr;  // [n_tok] positions of the new tokens
  const float* q = nullptr;    // [n_tok, n_heads, head_dim] post-RoPE
  float* out = nullptr;        // [n_tok, n_heads, head_dim]
};

struct AttnStats {
  uint64_t decode_tokens = 0;  // single-token decode steps
  uint64_t decode_steps = 0;   // (layer, query head) decode attentions run
  uint64_t slots_read = 0;     // K/V rows they read
  uint64_t slots_visible = 0;  // rows dense attention would have read
  // Of slots_read (and slots_visible), the rows sliding-window layers read: their window, dense,
  // no policy involved. slots_read - window_slots is the policy-driven (global layers') part.
  uint64_t window_slots = 0;
  // Bytes per kv-head group: a shared selection's rows count once for the group (one gather),
  // per-head selections count per query head.
  uint64_t select_bytes = 0;   // read by policies to choose (TIP, oracle scoring)
  uint64_t attend_bytes = 0;   // K and V rows read by attention over the selection
  uint64_t dense_bytes = 0;    // K and V rows dense attention would have read
  uint64_t window_bytes = 0;   // of attend_bytes (and dense_bytes): sliding-window layers'
  // Decode steps' reads from a file-backed KV tier (FASA-M), as the device delivered them
  // (whole blocks); attend_bytes above counts the rows themselves, whichever tier held them.
  // Of decode_steps: those where the policy attended densely because selecting would not pay
  // at this context length (Selection::dense_fallback).
  uint64_t dense_fallbacks = 0;
  uint64_t tier_reads = 0;
  uint64_t tier_read_bytes = 0;
  uint64_t tier_read_ns = 0;
  // Of those: the background reads (prefetch), the rows they fetched and the rows a decode
  // step then found there.
  uint64_t tier_prefetch_bytes = 0;
  uint64_t tier_prefetch_rows = 0;
  uint64_t tier_prefetch_hits = 0;
  uint64_t bytes_read() const { return select_bytes + attend_bytes; }
  // Share of the cached rows the global (policy-driven) layers read at decode steps: 1 when
  // there were none.
  double global_read_fraction() const {
    const uint64_t visible = slots_visible - window_slots;
    return visible ? static_cast<double>(slots_read - window_slots) / visible : 1.0;
  }
};

// K/V of the new tokens must already be stored in `cache` for this layer.
void attention_forward(const AttnStep& step, const KvCache& cache, AttentionPolicy& policy,
                       AttnStats* stats);

}  // namespace fasa
