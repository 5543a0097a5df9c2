// Small element-wise and row kernels of the forward pass. Plain loops the compiler vectorizes;
// reductions use a fixed order so results never depend on batching or threading.
#pragma once

#include <cstdint>

namespace fasa {

enum class RopeLayout { Norm, Neox };  // NORM: pairs (2i, 2i+1); NEOX: pairs (i, i + d/2)
const char* rope_layout_name(RopeLayout layout);  // "norm" | "neox"

// y[i] = x[i] / sqrt(mean(x^2) + eps) * w[i];  x, y, w: [n]  (x == y allowed)
void rmsnorm(const float* x, const float* w, float eps, int64_t n, float* y);

// Rotates one head vector in place. v: [head_dim]; only the first rope_dim dims rotate.
// freqs: [rope_dim / 2] angular frequencies (radians per position) for the pairs.
void rope_apply(float* v, int64_t head_dim, int64_t rope_dim, RopeLayout layout, int64_t pos,
                const float* freqs);

// freqs[i] = base^(-2i / rope_dim), i in [0, rope_dim / 2)
void rope_freqs(float base, int64_t rope_dim, float* freqs);

// h[i] = silu(g[i]) * u[i]; all [n]
void silu_mul(const float* g, const float* u, int64_t n, float* h);

// h[i] = gelu(g[i]) * u[i] with the tanh form of GELU:
// gelu(x) = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))); all [n]
void gelu_tanh_mul(const float* g, const float* u, int64_t n, float* h);

// y[i] += x[i]; [n]
void add_inplace(float* y, const float* x, int64_t n);

// In place softmax over [n]. Max-subtracted; exp by softmax_exp (vectorized, same bits); the sum in
// double over 16 lanes (lane = i mod 16) added in a fixed tree. Same result on every path.
void softmax_inplace(float* x, int64_t n);
// The exp softmax uses, for x <= 0 (0 below -104); within 2 ulp of expf.
float softmax_exp(float x);
// e[i] = softmax_exp(x[i] - m) for i in [0, n) (x == e allowed); vectorized, same bits.
void softmax_exp_shifted(const float* x, float m, int64_t n, float* e);

namespace detail {
void softmax_portable(float* x, int64_t n);  // the non-SIMD softmax_inplace (same bits)
}  // namespace detail

}  // namespace fasa
