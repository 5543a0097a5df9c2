#include "fasa/engine/logit_rules.h"

#include <unordered_map>
#include <unordered_set>

namespace fasa {

void LogitRules::apply(float* logits, int n_vocab, const std::vector<int32_t>& generated) const {
  auto in_range = [&](int32_t id) { return id >= 0 && id < n_vocab; };
  if (repetition_penalty != 1.0f) {
    std::unordered_set<int32_t> seen(prompt.begin(), prompt.end());
    seen.insert(generated.begin(), generated.end());
    for (int32_t id : seen) {
      if (!in_range(id)) continue;
      float& l = logits[id];
      l = l > 0.0f ? l / repetition_penalty : l * repetition_penalty;
    }
  }
  if (presence_penalty != 0.0f || frequency_penalty != 0.0f) {
    std::unordered_map<int32_t, int> count;
    for (int32_t id : generated) count[id] += 1;
    for (const auto& [id, n] : count) {
      if (in_range(id)) logits[id] -= presence_penalty + frequency_penalty * static_cast<float>(n);
    }
  }
  for (const auto& [id, b] : bias) {
    if (in_range(id)) logits[id] += b;
  }
}

}  // namespace fasa
