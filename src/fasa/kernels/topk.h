// Deterministic top-k over scores: highest first, ties broken by the lower index.
#pragma once

#include <cstdint>
#include <vector>

namespace fasa {

// Indices of the k largest scores[0..n), returned sorted ascending (as slot lists are).
// k is clamped to [0, n]. out: [k]. O(n): for small k a sampled threshold filters the candidates
// for introselect; otherwise introselect over all. Scores must not be NaN (-inf
// is fine). Equal scores (+0 and -0 included): the lower index wins.
void top_k_indices(const float* scores, int n, int k, std::vector<int32_t>& out);

// |A ∩ B| of two ascending, duplicate-free index lists.
int sorted_overlap(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

}  // namespace fasa
