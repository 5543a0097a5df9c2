#include "fasa/attention/policies/policy_options.h"

#include <cstdlib>

#include "fasa/attention/calibration.h"
#include "fasa/core/error.h"

namespace fasa {

int parse_policy_count(const std::string& policy, const std::string& key, const std::string& v) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < 0 || x > (1 << 24)) {
    fail("policy '{}': {} must be a non-negative whole number (got '{}')", policy, key, v);
  }
  return static_cast<int>(x);
}

std::set<int> parse_dense_layers(const std::string& policy, const std::string& value,
                                 const AttnShape& shape) {
  std::set<int> layers;
  if (value == "none") return layers;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t plus = value.find('+', start);
    const int l = parse_policy_count(policy, "dense_layers", value.substr(start, plus - start));
    if (l >= shape.n_layers) {
      fail("policy '{}': dense layer {} does not exist (the model has {} layers)", policy, l,
           shape.n_layers);
    }
    if (shape.window(l) > 0) {
      fail("policy '{}': layer {} is a sliding-window layer (it attends over its window of {}, "
           "outside any policy); dense_layers may name the global layers {}",
           policy, l, shape.window(l), layer_list_text(shape.global_layers()));
    }
    layers.insert(l);
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return layers;
}

void drop_sliding_window_layers(std::set<int>& layers, const AttnShape& shape) {
  std::erase_if(layers, [&](int l) { return l >= shape.n_layers || shape.window(l) > 0; });
}

}  // namespace fasa
