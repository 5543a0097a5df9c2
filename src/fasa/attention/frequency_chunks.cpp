#include "fasa/attention/frequency_chunks.h"

#include <algorithm>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/kernels/topk.h"

namespace fasa {

const char* fc_layout_name(FcLayout l) { return l == FcLayout::Rope ? "rope" : "adjacent"; }

FcLayout parse_fc_layout(const std::string& s) {
  if (s == "rope") return FcLayout::Rope;
  if (s == "adjacent") return FcLayout::Adjacent;
  fail("unknown FC layout '{}' (expected rope or adjacent)", s);
}

std::vector<FcDims> fc_dims(RopeLayout rope, FcLayout layout, int head_dim, int rope_dim) {
  if (head_dim < 2 || head_dim % 2 != 0) fail("head_dim {} must be even", head_dim);
  if (rope_dim != head_dim) {
    fail("frequency chunks need full rotary embeddings (rope dims {} != head_dim {})", rope_dim,
         head_dim);
  }
  const int d = head_dim, n_fc = d / 2;
  std::vector<FcDims> out(n_fc);
  for (int i = 0; i < n_fc; ++i) {
    if (layout == FcLayout::Rope) {
      out[i] = rope == RopeLayout::Norm ? FcDims{2 * i, 2 * i + 1} : FcDims{i, i + n_fc};
    } else if (rope == RopeLayout::Neox) {
      out[i] = FcDims{2 * i, 2 * i + 1};
    } else {
      // HF (half-split) dim x sits at GGUF dim 2x (x < d/2) or 2(x - d/2) + 1 (x >= d/2).
      auto gguf_dim = [&](int x) { return x < n_fc ? 2 * x : 2 * (x - n_fc) + 1; };
      out[i] = FcDims{gguf_dim(2 * i), gguf_dim(2 * i + 1)};
    }
  }
  return out;
}

void fc_logits(const float* q, const float* keys, int n, int head_dim,
               const std::vector<FcDims>& fcs, float* alpha) {
  const int n_fc = static_cast<int>(fcs.size());
  for (int i = 0; i < n_fc; ++i) {
    const int a = fcs[i].a, b = fcs[i].b;
    float* row = alpha + static_cast<size_t>(i) * n;
    for (int t = 0; t < n; ++t) {
      const float* k = keys + static_cast<size_t>(t) * head_dim;
      row[t] = q[a] * k[a] + q[b] * k[b];
    }
  }
}

namespace {

void full_logits(const float* q, const float* keys, int n, int head_dim, float* out) {
  for (int t = 0; t < n; ++t) {
    const float* k = keys + static_cast<size_t>(t) * head_dim;
    float s = 0.0f;
    for (int i = 0; i < head_dim; ++i) s += q[i] * k[i];
    out[t] = s;
  }
}

}  // namespace

void fc_agreement(const float* q, const float* keys, int n, int head_dim,
                  const std::vector<FcDims>& fcs, int k, float* ca) {
  const int n_fc = static_cast<int>(fcs.size());
  const int kk = std::min(k, n);
  std::vector<float> full(n), alpha(static_cast<size_t>(n_fc) * n);  // [n], [n_fc, n]
  full_logits(q, keys, n, head_dim, full.data());
  fc_logits(q, keys, n, head_dim, fcs, alpha.data());
  std::vector<int32_t> top_full, top_fc;
  top_k_indices(full.data(), n, kk, top_full);
  for (int i = 0; i < n_fc; ++i) {
    top_k_indices(alpha.data() + static_cast<size_t>(i) * n, n, kk, top_fc);
    ca[i] = kk > 0 ? static_cast<float>(sorted_overlap(top_full, top_fc)) / kk : 0.0f;
  }
}

float compound_agreement(const float* q, const float* keys, int n, int head_dim,
                         const std::vector<FcDims>& fcs, const std::vector<int>& set, int k) {
  const int kk = std::min(k, n);
  if (kk <= 0) return 0.0f;
  std::vector<float> full(n), score(n, 0.0f);
  full_logits(q, keys, n, head_dim, full.data());
  for (int i : set) {
    FASA_CHECK(i >= 0 && i < static_cast<int>(fcs.size()));
    const int a = fcs[i].a, b = fcs[i].b;
    for (int t = 0; t < n; ++t) {
      const float* kr = keys + static_cast<size_t>(t) * head_dim;
      score[t] += q[a] * kr[a] + q[b] * kr[b];
    }
  }
  std::vector<int32_t> top_full, top_set;
  top_k_indices(full.data(), n, kk, top_full);
  top_k_indices(score.data(), n, kk, top_set);
  return static_cast<float>(sorted_overlap(top_full, top_set)) / kk;
}

}  // namespace fasa
