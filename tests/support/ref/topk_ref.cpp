#include <algorithm>
#include <numeric>

#include "support/ref/kernels_ref.h"

namespace fasa::ref {

// A full stable sort by (score descending, index ascending), then the first k ascending.
void top_k_indices(const float* scores, int n, int k, std::vector<int32_t>& out) {
  k = std::clamp(k, 0, n);
  out.resize(n);
  std::iota(out.begin(), out.end(), 0);
  std::stable_sort(out.begin(), out.end(), [&](int32_t a, int32_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  });
  out.resize(k);
  std::sort(out.begin(), out.end());
}

}  // namespace fasa::ref
