// Frequency chunks (FCs): the 2-D planes RoPE rotates, and the Contextual Agreement statistic
// FASA calibrates on (the paper, arXiv 2602.03152, §3; docs/POLICIES.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fasa/kernels/ops.h"

namespace fasa {

enum class FcLayout {
  Rope,      // true RoPE planes in the model's own layout (default)
  Adjacent,  // the authors' grouping: dims (2j, 2j+1) of the half-split (Hugging Face) layout
};
const char* fc_layout_name(FcLayout l);
FcLayout parse_fc_layout(const std::string& s);  // "rope" | "adjacent"; throws fasa::Error

struct FcDims {
  int a = 0;  // the two head dims (as stored in the GGUF) whose products form FC logits
  int b = 0;
};

// The head dims of every FC: [head_dim / 2].
//   Rope + NORM:     FC i = (2i, 2i+1)            Rope + NEOX: FC i = (i, i + d/2)
//   Adjacent + NEOX: FC j = (2j, 2j+1)
//   Adjacent + NORM: the `llama` converter moved HF dim m < d/2 to 2m and m + d/2 to 2m+1, so
//                    HF dims (2j, 2j+1) are (4j, 4j+2) for j < d/4, else (4j-d+1, 4j-d+3).
// Throws fasa::Error for partial rotary (rope_dim != head_dim) or an odd head_dim.
std::vector<FcDims> fc_dims(RopeLayout rope, FcLayout layout, int head_dim, int rope_dim);

// Per-FC logits alpha[i][t] = q[a_i] k_t[a_i] + q[b_i] k_t[b_i]  (raw: no softmax, no scale).
// q: [head_dim]; keys: [n, head_dim] f32; alpha: [n_fc, n]
void fc_logits(const float* q, const float* keys, int n, int head_dim,
               const std::vector<FcDims>& fcs, float* alpha);

// Contextual Agreement of every FC with the full head for one query over n keys:
// ca[i] = |TopK(q . k_t) ∩ TopK(alpha_i)| / K, K = min(k, n). Top-k ties break by the lower
// index. q: [head_dim]; keys: [n, head_dim] f32; ca: [n_fc]
void fc_agreement(const float* q, const float* keys, int n, int head_dim,
                  const std::vector<FcDims>& fcs, int k, float* ca);

// Compound CA of a set of FCs (their alphas summed) with the full head.
float compound_agreement(const float* q, const float* keys, int n, int head_dim,
                         const std::vector<FcDims>& fcs, const std::vector<int>& set, int k);

}  // namespace fasa
