// Order statistics for the calibration's sampled greedy (attention/compound_greedy_sampled.cpp).
//
// sum_rth_largest: the r-th largest (1 <= r <= n) of v[i] = a[i] + b[i], i in [0, n): exactly the
//   value std::nth_element finds with std::greater (the same bits, except that a result of zero
//   may come back as +0 where nth_element gives -0 or the reverse: the two compare equal). a, b:
//   [n], no NaN (+-inf is fine); scratch: [2 n + 16] floats. Without data-dependent branches
//   over the values: the sums map to order-preserving integer keys; the upper half of a key of
//   a lower rank among every 8th sum bounds the r-th largest from below, so that one pass keeps
//   the few keys that can be it (vector compress-store on AVX-512); its upper half is then found
//   bit by bit (the largest t with at least r keys >= t: 16 vectorized counts), its lower half
//   likewise among the keys that share the upper half.
// rth_largest: the same for v[i] alone.
#pragma once

#include <cstdint>

#include "fasa/kernels/kernel_list.h"

namespace fasa {

#define FASA_SELECT_KERNELS(X)                                                                     \
  X(float, sum_rth_largest,                                                                        \
    (const float* a, const float* b, int64_t n, int64_t r, float* scratch), (a, b, n, r, scratch)) \
  X(float, rth_largest, (const float* v, int64_t n, int64_t r, float* scratch), (v, n, r, scratch))
FASA_SELECT_KERNELS(FASA_DECLARE_KERNEL)

}  // namespace fasa
