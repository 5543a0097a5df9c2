// Exact softmax attention over a list of cached rows: the FAC kernel of decode, and (over every
// slot, causally) prefill. One tiled online-softmax ("flash") scheme serves both, so a token's
// output is the same bits whether it was prefilled in a chunk or decoded alone.
//
// The scheme, for one query over keys j in [0, n) (row slots[j], or j when slots is null):
//   - keys are cut into chunks of kAttnChunk, each chunk into tiles of kAttnTile, at fixed
//     offsets from key 0;
//   - a chunk's partial state (m, l, acc) runs over its tiles in order: s_j = scale * q . K_j,
//     m' = max(m, max_tile s), c = exp(m - m'), e_j = exp(s_j - m'),
//     l = l c + sum_tile e_j (16 lanes, lane = j mod 16, then a fixed tree), acc = acc c + sum e_j V_j;
//   - chunk states are merged in chunk order, and out = acc / l.
// Memory is O(head_dim) per query, never O(n^2); chunks are the unit of parallel work in decode.
//
// Q8_0 rows (KvType::Q8_0, kernels/q8_0.h): each query is quantized once per call the same way
// as the keys (per 32-block: fp16 scale dq_b, int8 codes), and q . K_j is
//   acc = 0;  for blocks b in order: isum_b = sum_{i < 32} qq_bi * kq_bi   (an exact int32)
//             acc = fma(dq_b * dk_b, float(isum_b), acc)
// (dq_b * dk_b is exact: two fp16 values). V is read as fp32 values d_b * q (exact) and summed
// as above: acc = fma(e_j, d_b * q, acc). Only the integer sum differs between paths (VNNI
// dpbusd, AVX2 maddubs + madd, plain C++), so every path gives the same bits
// (ref::qk_scores_q8 is this sequence written out; tests/kernels/isa_test.cpp compares them).
#pragma once

#include <cstdint>

#include "fasa/kernels/kernel_list.h"
#include "fasa/kernels/kv_rows.h"

namespace fasa {

inline constexpr int kAttnTile = 64;    // keys scored, exponentiated and accumulated together
inline constexpr int kAttnChunk = 128;  // keys per partial state

// A partial state is [head_dim + 2] floats: acc[head_dim], then m, then l. Empty: m = -inf,
// l = 0, acc = 0.
inline constexpr int attn_state_size(int head_dim) { return head_dim + 2; }

// attn_state_clear: an empty state.
// attend_partial: for each of n_q queries that read the same key list, the partial state over
//   keys [begin, min(end, n_keys[i])) into states + i * attn_state_size(head_dim). begin must be
//   a multiple of kAttnChunk and end - begin <= kAttnChunk. qs: [n_q] pointers to [head_dim].
// attn_state_merge: into = merge(into, from), the state over both key sets (into's keys first).
// attn_state_finish: out[head_dim] = acc / l (zeros for an empty state).
// attend_one: one query over keys [0, n): chunk by chunk, merged in order. q, out: [head_dim].
// attend_probs: attention probabilities for a policy that learns from them:
//   p = softmax(scale * q . K[s_j]). probs: [n]. (Computed apart from attend_one, which never
//   materializes them.)
// qk_scores: raw logits q . K[s_j] (no scale) for j in [0, n); scores: [n].
#define FASA_ATTEND_KERNELS(X)                                                                     \
  X(void, attn_state_clear, (float* state, int head_dim), (state, head_dim))                       \
  X(void, attend_partial,                                                                          \
    (const float* const* qs, int n_q, const int* n_keys, const KvRows& rows, const int32_t* slots, \
     int begin, int end, float scale, float* states),                                              \
    (qs, n_q, n_keys, rows, slots, begin, end, scale, states))                                     \
  X(void, attn_state_merge, (float* into, const float* from, int head_dim),                        \
    (into, from, head_dim))                                                                        \
  X(void, attn_state_finish, (const float* state, int head_dim, float* out),                       \
    (state, head_dim, out))                                                                        \
  X(void, attend_one,                                                                              \
    (const float* q, const KvRows& rows, const int32_t* slots, int n, float scale, float* out),    \
    (q, rows, slots, n, scale, out))                                                               \
  X(void, attend_probs,                                                                            \
    (const float* q, const KvRows& rows, const int32_t* slots, int n, float scale, float* probs),  \
    (q, rows, slots, n, scale, probs))                                                             \
  X(void, qk_scores,                                                                               \
    (const float* q, const KvRows& rows, const int32_t* slots, int n, float* scores),              \
    (q, rows, slots, n, scores))
FASA_ATTEND_KERNELS(FASA_DECLARE_KERNEL)

}  // namespace fasa
