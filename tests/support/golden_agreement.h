// Teacher-forced top-1 agreement with a model-goldens file (scripts/dev/make_model_goldens.py):
// overall, and where the reference's top-1 leads its runner-up by >= 0.5 logits.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace fasa::test {

struct GoldenAgreement {
  int agree = 0, total = 0;            // every position
  int agree_conf = 0, total_conf = 0;  // positions with reference margin >= 0.5
  double overall() const { return total ? static_cast<double>(agree) / total : 0.0; }
  double confident() const { return total_conf ? static_cast<double>(agree_conf) / total_conf : 0.0; }
};

// argmax: [n_chunks * n_ctx] our top-1 per position, chunk after chunk, as PplResult::argmax.
GoldenAgreement golden_agreement(const nlohmann::json& goldens, const std::vector<int32_t>& argmax);

}  // namespace fasa::test
