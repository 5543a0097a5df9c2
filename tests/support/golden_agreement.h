// Teacher-forced top-1 agreement with a model-goldens file (scripts/dev/make_model_goldens.py):
// overall, and where the reference's top-1 leads its runner-up by >= 0.5 logits; and the
// recorded greedy answer checked over its whole length.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fasa {
class Session;
}

namespace fasa::test {

struct GoldenAgreement {
  int agree = 0, total = 0;            // every position
  int agree_conf = 0, total_conf = 0;  // positions with reference margin >= 0.5
  double overall() const { return total ? static_cast<double>(agree) / total : 0.0; }
  double confident() const {
    return total_conf ? static_cast<double>(agree_conf) / total_conf : 0.0;
  }
};

// argmax: [n_chunks * n_ctx] our top-1 per position, chunk after chunk, as PplResult::argmax.
GoldenAgreement golden_agreement(const nlohmann::json& goldens, const std::vector<int32_t>& argmax);

// The reference's greedy answer (`chat_greedy_tokens` after `chat_prompt_tokens`), teacher-forced
// through a fresh session over its whole length: at every position, how far our logit of the
// reference's token lies below our top-1 (0 where the reference's token is our top-1).
struct GreedyCheck {
  std::vector<int32_t> ours;  // [n] our top-1 at each position
  std::vector<double> gap;    // [n] our logit of our top-1 minus our logit of the reference's token
  int exact() const;          // positions where the reference's token is our top-1 (gap 0)
  double worst() const;       // the largest gap
  std::string report() const;  // "k of n top-1 equal; largest gap g logits at position i"
};
GreedyCheck teacher_forced_greedy(Session& s, const std::vector<int32_t>& prompt,
                                  const std::vector<int32_t>& want);

// Two implementations' greedy paths may part at a near-tie; a gap below this (the logits bar of
// the agreement criterion above) is one.
inline constexpr double kGreedyNearTie = 0.5;

// Success when the check covers all of `want` and every gap is below `bar`; otherwise names
// each position that is not (the reference's token and ours).
::testing::AssertionResult within_near_tie(const GreedyCheck& c, const std::vector<int32_t>& want,
                                           double bar = kGreedyNearTie);

}  // namespace fasa::test
