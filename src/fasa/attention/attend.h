// Exact softmax attention of one query head over a list of cached rows (the FAC kernel; dense
// attention is the same call over every slot).
#pragma once

#include <cstdint>

#include "fasa/attention/kv_cache.h"

namespace fasa {

struct KvRows {
  const void* k = nullptr;  // [capacity, head_dim] of `type`
  const void* v = nullptr;  // [capacity, head_dim] of `type`
  KvType type = KvType::F16;
  int head_dim = 0;
};

// out = sum_j p_j V[s_j] with p = softmax(scale * q . K[s_j]), s_j = slots[j] (or j when slots
// is null), j in [0, n). q, out: [head_dim]; probs: [n] scratch, holds p on return.
void attend_one(const float* q, const KvRows& rows, const int32_t* slots, int n, float scale,
                float* probs, float* out);

// Raw logits q . K[s_j] (no scale) for j in [0, n); scores: [n].
void qk_scores(const float* q, const KvRows& rows, const int32_t* slots, int n, float* scores);

namespace ref {
void attend_one(const float* q, const KvRows& rows, const int32_t* slots, int n, float scale,
                float* probs, float* out);
}  // namespace ref

}  // namespace fasa
