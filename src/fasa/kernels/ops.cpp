#include "fasa/kernels/ops.h"

#include <cmath>

namespace fasa {

const char* rope_layout_name(RopeLayout layout) {
  return layout == RopeLayout::Norm ? "norm" : "neox";
}

void rmsnorm(const float* x, const float* w, float eps, int64_t n, float* y) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void rope_freqs(float base, int64_t rope_dim, float* freqs) {
  for (int64_t i = 0; i < rope_dim / 2; ++i) {
    freqs[i] = static_cast<float>(std::pow(static_cast<double>(base),
                                           -2.0 * static_cast<double>(i) / rope_dim));
  }
}

void rope_apply(float* v, int64_t head_dim, int64_t rope_dim, RopeLayout layout, int64_t pos,
                const float* freqs) {
  const int64_t n_pairs = rope_dim / 2;
  for (int64_t i = 0; i < n_pairs; ++i) {
    const double angle = static_cast<double>(pos) * freqs[i];
    const float c = static_cast<float>(std::cos(angle));
    const float s = static_cast<float>(std::sin(angle));
    const int64_t a = layout == RopeLayout::Norm ? 2 * i : i;
    const int64_t b = layout == RopeLayout::Norm ? 2 * i + 1 : i + n_pairs;
    const float x0 = v[a];
    const float x1 = v[b];
    v[a] = x0 * c - x1 * s;
    v[b] = x0 * s + x1 * c;
  }
  (void)head_dim;
}

void silu_mul(const float* g, const float* u, int64_t n, float* h) {
  for (int64_t i = 0; i < n; ++i) h[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void softmax_inplace(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace fasa
