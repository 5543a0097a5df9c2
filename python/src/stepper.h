// One generation on a PySession, a step at a time (generate runs every step; a Stream one per
// Python next()). The first step prefills the prompt; each step then samples one token (plain
// decoding: the decode step appending the previous token, then Generation::step; lossless: a
// draft-and-verify cycle) and returns the text that became final (may be ""). The tokens are
// those of the engine's generate()/generate_lossless(), token for token.
// After every step, also one that throws (an interrupt), PySession::ids are the tokens the
// cache holds: a lossless cycle cut short is rolled back to its save point first. The caller
// holds the session's mutex during each step; a Stepper that threw takes no more steps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/lossless.h"
#include "fasa/engine/lossless_options.h"

namespace fasa::py {

// What a generation gave: the engine's result, what its steps read, and its lossless counts.
struct GenerateOutcome {
  GenerateResult result;  // tokens, text, stop reason, n_prompt, prefill_ms, decode_ms
  AttnStats attn;
  bool lossless = false;
  LosslessStats lossless_stats;
};
// As the dict the Python side makes its GenerateResult of (GIL held).
pb::dict outcome_dict(const GenerateOutcome& o);

class Stepper {
 public:
  // Checks the options (fasa::Error); the prompt is checked by the first step.
  Stepper(PySession& s, std::vector<int32_t> prompt, const GenerateOptions& go,
          const LosslessOptions& lo);
  std::string step();  // while !done()
  bool done() const;
  bool failed() const { return failed_; }
  GenerateOutcome outcome() const;  // so far (decode_ms: the steps' engine time)

 private:
  void prefill();
  std::string next_piece();
  const Generation& generation() const;
  void sync_ids();

  PySession& s_;
  std::vector<int32_t> prompt_;
  GenerateOptions go_;
  LosslessOptions lo_;
  size_t base_ = 0;  // ids held before the prompt
  AttnStats attn0_;
  std::unique_ptr<Generation> gen_;           // plain decoding
  std::unique_ptr<LosslessGeneration> lgen_;  // lossless decoding
  bool prefilled_ = false, started_ = false, failed_ = false;
  GenerateResult r_;
};

}  // namespace fasa::py
