#include "fasa/kernels/topk.h"

#include <algorithm>
#include <numeric>

namespace fasa {

void top_k_indices(const float* scores, int n, int k, std::vector<int32_t>& out) {
  k = std::clamp(k, 0, n);
  out.resize(n);
  std::iota(out.begin(), out.end(), 0);
  if (k < n) {
    std::nth_element(out.begin(), out.begin() + k, out.end(), [&](int32_t a, int32_t b) {
      return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
    });
    out.resize(k);
  }
  std::sort(out.begin(), out.end());
}

int sorted_overlap(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  int n = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] == b[j]) {
      ++n;
      ++i;
      ++j;
    } else if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return n;
}

}  // namespace fasa
