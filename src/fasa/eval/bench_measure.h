// The measuring part of run_bench (eval/bench.h): the contexts, the timed prefills and decode
// steps, and the counters read after each test.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fasa/engine/lossless_options.h"
#include "fasa/engine/session.h"
#include "fasa/eval/bench.h"

namespace fasa {

// Random token ids (speed does not depend on them), as many as the longest use needs: the
// depth's context, the pp tests' prompt, the tg tests' inputs.
struct BenchTokens {
  std::vector<int32_t> ctx, pp, tg;
};

// n token ids drawn uniformly from the vocabulary with `seed`.
std::vector<int32_t> bench_tokens(int n, int n_vocab, uint32_t seed);
// The first n tokens of `text` (repeated when it is shorter): a real context.
std::vector<int32_t> bench_text_tokens(const Model& model, const std::string& text, int n);

// What every test of a run shares.
struct BenchRig {
  std::vector<std::unique_ptr<Session>> sessions;  // [n_policies]
  std::vector<std::string> specs;                  // [n_policies]
  std::shared_ptr<const Model> model;
  SessionOptions so;  // the sessions' options (policy: the last made)
  BenchTokens tok;
  bool synthetic = false;  // the depth is filled with synthetic rows
  LosslessOptions lossless;
};

// First touches of the weights, the pool's threads, AMX tiles: a short prefill and one decode
// step per session (fitting the context), untimed.
void bench_warm_up(const BenchRig& rig);

// One test at one depth for every policy, `reps` times. Repetitions alternate between the
// policies, so drift and noise on a shared machine hit every policy alike and the ratios stay
// fair.
std::vector<BenchMeasure> measure_bench_test(const BenchRig& rig, const BenchTest& t, int depth,
                                             int reps);

}  // namespace fasa
