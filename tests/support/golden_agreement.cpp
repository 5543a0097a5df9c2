#include "support/golden_agreement.h"

namespace fasa::test {

GoldenAgreement golden_agreement(const nlohmann::json& g, const std::vector<int32_t>& argmax) {
  const int n_ctx = g["n_ctx"], n_chunks = g["n_chunks"];
  GoldenAgreement a;
  for (int c = 0; c < n_chunks; ++c) {
    const auto ref = g["chunks"][c]["argmax"].get<std::vector<int32_t>>();
    const auto margin = g["chunks"][c]["margin"].get<std::vector<double>>();
    for (int i = 0; i < n_ctx; ++i) {
      const bool same = argmax.at(static_cast<size_t>(c) * n_ctx + i) == ref[i];
      a.agree += same;
      ++a.total;
      if (margin[i] >= 0.5) {
        a.agree_conf += same;
        ++a.total_conf;
      }
    }
  }
  return a;
}

}  // namespace fasa::test
