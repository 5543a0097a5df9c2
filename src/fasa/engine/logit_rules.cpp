#include "fasa/engine/logit_rules.h"

#include <cstddef>
#include <unordered_map>
#include <unordered_set>

namespace fasa {

void LogitRules::apply(float* logits, int n_vocab, const std::vector<int32_t>& generated) const {
  auto in_range = [&](int32_t id) { return id >= 0 && id < n_vocab; };
  if (repetition_penalty != 1.0f) {
    // The window: the last repetition_last_n ids of prompt followed by generated.
    const size_t total = prompt.size() + generated.size();
    const size_t skip = repetition_last_n < 0 || static_cast<size_t>(repetition_last_n) >= total
                            ? 0
                            : total - static_cast<size_t>(repetition_last_n);
    std::unordered_set<int32_t> seen;
    for (size_t i = skip; i < prompt.size(); ++i) seen.insert(prompt[i]);
    const size_t from_gen = skip > prompt.size() ? skip - prompt.size() : 0;
    seen.insert(generated.begin() + static_cast<std::ptrdiff_t>(from_gen), generated.end());
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
