#include "support/golden_agreement.h"

#include <algorithm>

#include <fmt/format.h>

#include "fasa/engine/session.h"

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

GreedyCheck teacher_forced_greedy(Session& s, const std::vector<int32_t>& prompt,
                                  const std::vector<int32_t>& want) {
  GreedyCheck c;
  const std::vector<float>* logits = &s.prefill(prompt);
  for (size_t i = 0; i < want.size(); ++i) {
    const std::vector<float>& l = *logits;
    const auto top = std::max_element(l.begin(), l.end()) - l.begin();
    c.ours.push_back(static_cast<int32_t>(top));
    c.gap.push_back(static_cast<double>(l[top]) - l.at(want[i]));
    if (i + 1 < want.size()) logits = &s.decode(want[i]);
  }
  return c;
}

int GreedyCheck::exact() const {
  int n = 0;
  for (double g : gap) n += g == 0.0;
  return n;
}

double GreedyCheck::worst() const {
  return gap.empty() ? 0.0 : *std::max_element(gap.begin(), gap.end());
}

std::string GreedyCheck::report() const {
  const auto at = std::max_element(gap.begin(), gap.end()) - gap.begin();
  return fmt::format("{} of {} top-1 equal; largest gap {:.4f} logits at position {}", exact(),
                     gap.size(), worst(), at);
}

::testing::AssertionResult within_near_tie(const GreedyCheck& c, const std::vector<int32_t>& want,
                                           double bar) {
  if (c.gap.size() != want.size()) {
    return ::testing::AssertionFailure()
           << "checked " << c.gap.size() << " of " << want.size() << " positions";
  }
  std::string bad;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!(c.gap[i] < bar)) {
      bad += fmt::format(" position {}: reference {}, ours {}, gap {:.4f};", i, want[i], c.ours[i],
                         c.gap[i]);
    }
  }
  if (bad.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "gap >= " << bar << " logits at" << bad;
}

}  // namespace fasa::test
