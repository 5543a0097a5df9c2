// The sampling flags of `fasa run` and `fasa chat`: --temp, --top-k, --top-p, --min-p, the
// seed, and llama.cpp's --repeat-penalty and --repeat-last-n.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fasa/engine/logit_rules.h"
#include "fasa/engine/sampler.h"

namespace fasa::cli {

struct SamplingArgs {
  SamplerParams sampler;
  int64_t seed = -1;  // -1: a random seed, printed so the run can be repeated
  // llama.cpp's: a token among the last repeat_last_n of the context (prompt and output) has
  // its logit divided by the penalty (multiplied when negative); 1 = off; repeat_last_n 0 =
  // off, -1 = the whole context.
  float repeat_penalty = 1.0f;
  int repeat_last_n = 64;
};

// `seed_flags`: "-s,--seed" (run) or "--seed" (chat, whose -s is --system).
void add_sampling_options(CLI::App* cmd, SamplingArgs& s, const std::string& seed_flags);

// Checks every value (fasa::Error naming the flag) and sets sampler.seed: the one given, or a
// random one.
void resolve_sampling(SamplingArgs& s);

// True when the repetition penalty is on.
bool repeat_penalty_on(const SamplingArgs& s);

// The logit rules of a generation after `context` (the prompt, or the whole conversation): the
// repetition penalty over its last repeat_last_n tokens and the output.
LogitRules sampling_rules(const SamplingArgs& s, const std::vector<int32_t>& context);

// "fasa: seed N (random; --seed repeats a run)" on stderr when sampling is not greedy.
void print_seed(const SamplingArgs& s);

}  // namespace fasa::cli
