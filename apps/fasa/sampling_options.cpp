#include "sampling_options.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "fasa/core/error.h"

namespace fasa::cli {

void add_sampling_options(CLI::App* cmd, SamplingArgs& s, const std::string& seed_flags) {
  cmd->add_option("--temp", s.sampler.temp, "temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--top-k", s.sampler.top_k, "top-k (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", s.sampler.top_p, "top-p (1 = off)")->capture_default_str();
  cmd->add_option("--min-p", s.sampler.min_p, "min-p (0 = off)")->capture_default_str();
  cmd->add_option(seed_flags, s.seed, "sampling seed (-1: random, printed with --temp > 0)")
      ->capture_default_str();
  cmd->add_option("--repeat-penalty", s.repeat_penalty,
                  "divide the logit of a token seen in the last --repeat-last-n tokens by this "
                  "(llama.cpp's; 1 = off)")
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", s.repeat_last_n,
                  "tokens of the context --repeat-penalty looks at (0 = off, -1 = all)")
      ->capture_default_str();
}

void resolve_sampling(SamplingArgs& s) {
  if (s.seed < -1) fail("--seed must be >= 0, or -1 for a random seed (got {})", s.seed);
  if (!(s.repeat_penalty > 0.0f) || s.repeat_penalty > 10.0f) {
    fail("--repeat-penalty must be in (0, 10] (got {}; 1 = off)", s.repeat_penalty);
  }
  if (s.repeat_last_n < -1) {
    fail("--repeat-last-n must be >= -1 (got {}; 0 = off, -1 = the whole context)",
         s.repeat_last_n);
  }
  s.sampler.seed = s.seed >= 0 ? static_cast<uint64_t>(s.seed) : std::random_device{}();
  s.sampler.validate();
}

bool repeat_penalty_on(const SamplingArgs& s) {
  return s.repeat_penalty != 1.0f && s.repeat_last_n != 0;
}

LogitRules sampling_rules(const SamplingArgs& s, const std::vector<int32_t>& context) {
  LogitRules r;
  if (!repeat_penalty_on(s)) return r;
  r.repetition_penalty = s.repeat_penalty;
  r.repetition_last_n = s.repeat_last_n;
  const size_t keep =
      s.repeat_last_n < 0 ? context.size() : std::min(context.size(), size_t(s.repeat_last_n));
  r.prompt.assign(context.end() - static_cast<std::ptrdiff_t>(keep), context.end());
  return r;
}

void print_seed(const SamplingArgs& s) {
  if (s.sampler.temp <= 0) return;
  std::fprintf(stderr, "fasa: seed %llu%s\n", static_cast<unsigned long long>(s.sampler.seed),
               s.seed < 0 ? " (random; --seed repeats a run)" : "");
}

}  // namespace fasa::cli
