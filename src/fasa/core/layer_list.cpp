#include "fasa/core/layer_list.h"

#include <fmt/format.h>

namespace fasa {

std::string layer_list_text(const std::vector<int>& layers) {
  if (layers.empty()) return "none";
  bool run = layers.size() > 2;
  for (size_t i = 1; run && i < layers.size(); ++i) run = layers[i] == layers[i - 1] + 1;
  if (run) return fmt::format("{}-{}", layers.front(), layers.back());
  std::string s;
  for (size_t i = 0; i < layers.size(); ++i) s += (i ? ", " : "") + std::to_string(layers[i]);
  return s;
}

}  // namespace fasa
