#include "fasa/engine/lossless_options.h"

#include <exception>
#include <string>

#include "fasa/core/error.h"

namespace fasa {

LosslessOptions parse_lossless(const std::string& value) {
  LosslessOptions o;
  if (value == "off" || value == "0") return o;
  if (value == "auto") {
    o.k = 4;
    o.adaptive = true;
    return o;
  }
  size_t used = 0;
  int k = 0;
  try {
    k = std::stoi(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || k < 1 || k > LosslessOptions::kMaxK) {
    fail("--lossless takes off, auto or a number of drafts from 1 to {} (got '{}')",
         LosslessOptions::kMaxK, value);
  }
  o.k = k;
  return o;
}

std::string lossless_name(const LosslessOptions& o) {
  if (o.k == 0) return "off";
  return o.adaptive ? "auto" : std::to_string(o.k);
}

}  // namespace fasa
