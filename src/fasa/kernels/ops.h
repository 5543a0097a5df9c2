// Small element-wise and row kernels of the forward pass. Plain loops the compiler vectorizes;
// reductions use a fixed order so results never depend on batching or threading.
#pragma once

#include <cstdint>

#include "fasa/kernels/kernel_list.h"

namespace fasa {

enum class RopeLayout { Norm, Neox };  // NORM: pairs (2i, 2i+1); NEOX: pairs (i, i + d/2)

// rope_layout_name: "norm" | "neox".
// rmsnorm: y[i] = x[i] / sqrt(mean(x^2) + eps) * w[i];  x, y, w: [n]  (x == y allowed)
// rope_apply: rotates one head vector in place. v: [head_dim]; only the first rope_dim dims
//   rotate. freqs: [rope_dim / 2] angular frequencies (radians per position) for the pairs.
// rope_freqs: freqs[i] = base^(-2i / rope_dim), i in [0, rope_dim / 2)
// silu_mul: h[i] = silu(g[i]) * u[i]; all [n]
// gelu_tanh_mul: h[i] = gelu(g[i]) * u[i] with the tanh form of GELU:
//   gelu(x) = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))); all [n]
// add_inplace: y[i] += x[i]; [n]
// softmax_inplace: in place softmax over [n]. Max-subtracted; exp by softmax_exp (vectorized,
//   same bits); the sum in double over 16 lanes (lane = i mod 16) added in a fixed tree. Same
//   result on every path.
// softmax_exp: the exp softmax uses, for x <= 0 (0 below -104); within 2 ulp of expf.
// softmax_exp_shifted: e[i] = softmax_exp(x[i] - m) for i in [0, n) (x == e allowed);
//   vectorized, same bits.
// max_value: the largest of x[0, n) (n >= 1, no NaN); vectorized, exact.
// exp_sum_scaled: sum of softmax_exp(x[i] * a - m) over [0, n), in double over 16 lanes
//   (lane = i mod 16) added in softmax_inplace's fixed tree; m is max_value(x) * a for a > 0,
//   so a softmax of x * a is exp(x[i] * a - m) / exp_sum_scaled(x, a, m, n). Same bits on
//   every path; nothing is stored.
// exp_sum_fast: sum of e^(x[i] * a - m) over [0, n) (x[i] * a - m one fused multiply-add) to
//   about 1e-5 relative, for softmax masses that need no more (the exp a degree-4 polynomial,
//   within 3.5e-6; the sum in float over 16 lanes, lane = i mod 16, in a fixed tree): about half
//   of exp_sum_scaled's work. For m >= max(x) * a. Same bits on every path.
// softmax_scaled: y = the softmax of x * a over [0, n), m = max_value(x) * a (a > 0; y == x
//   allowed): softmax_exp(x[i] * a - m) times the float reciprocal of exp_sum_scaled. For a = 1
//   it is softmax_inplace's result bit for bit (x * 1 is x).
#define FASA_OPS_KERNELS(X)                                                                   \
  X(const char*, rope_layout_name, (RopeLayout layout), (layout))                             \
  X(void, rmsnorm, (const float* x, const float* w, float eps, int64_t n, float* y),          \
    (x, w, eps, n, y))                                                                        \
  X(void, rope_apply,                                                                         \
    (float* v, int64_t head_dim, int64_t rope_dim, RopeLayout layout, int64_t pos,            \
     const float* freqs),                                                                     \
    (v, head_dim, rope_dim, layout, pos, freqs))                                              \
  X(void, rope_freqs, (float base, int64_t rope_dim, float* freqs), (base, rope_dim, freqs))  \
  X(void, silu_mul, (const float* g, const float* u, int64_t n, float* h), (g, u, n, h))      \
  X(void, gelu_tanh_mul, (const float* g, const float* u, int64_t n, float* h), (g, u, n, h)) \
  X(void, add_inplace, (float* y, const float* x, int64_t n), (y, x, n))                      \
  X(void, softmax_inplace, (float* x, int64_t n), (x, n))                                     \
  X(float, softmax_exp, (float x), (x))                                                       \
  X(void, softmax_exp_shifted, (const float* x, float m, int64_t n, float* e), (x, m, n, e))  \
  X(float, max_value, (const float* x, int64_t n), (x, n))                                    \
  X(double, exp_sum_scaled, (const float* x, float a, float m, int64_t n), (x, a, m, n))      \
  X(float, exp_sum_fast, (const float* x, float a, float m, int64_t n), (x, a, m, n))         \
  X(void, softmax_scaled, (const float* x, float a, float m, int64_t n, float* y), (x, a, m, n, y))
FASA_OPS_KERNELS(FASA_DECLARE_KERNEL)

namespace detail {
// softmax_portable: the non-SIMD softmax_inplace (same bits).
#define FASA_OPS_DETAIL_KERNELS(X) X(void, softmax_portable, (float* x, int64_t n), (x, n))
FASA_OPS_DETAIL_KERNELS(FASA_DECLARE_KERNEL)
}  // namespace detail

}  // namespace fasa
