// Sampling options from Python (the dict the Python side checked), and Session.sample: the next
// token drawn from a session's last logits with generate's sampler and logit rules.
#include <pybind11/stl.h>

#include "bindings.h"
#include "fasa/core/error.h"

namespace fasa::py {

SamplerParams sampler_params(const pb::dict& a) {
  SamplerParams p;
  p.temp = a["temperature"].cast<float>();
  p.top_k = a["top_k"].cast<int>();
  p.top_p = a["top_p"].cast<float>();
  p.min_p = a["min_p"].cast<float>();
  p.seed = a["seed"].cast<uint64_t>();
  p.validate();
  return p;
}

LogitRules logit_rules(const pb::dict& a) {
  LogitRules r;
  r.presence_penalty = a["presence_penalty"].cast<float>();
  r.frequency_penalty = a["frequency_penalty"].cast<float>();
  r.repetition_penalty = a["repetition_penalty"].cast<float>();
  r.bias = a["logit_bias"].cast<std::vector<std::pair<int32_t, float>>>();
  return r;
}

GenerateOptions generate_options(const pb::dict& a) {
  GenerateOptions go;
  go.n_predict = a["max_tokens"].cast<int>();
  go.sampler = sampler_params(a);
  go.stop = a["stop"].cast<std::vector<std::string>>();
  go.rules = logit_rules(a);
  return go;
}

namespace {

// `history`: the ids the penalties count (LogitRules' generated tokens; repetition_penalty takes
// them as seen).
int32_t sample(PySession& self, const pb::dict& args, const std::vector<int32_t>& history) {
  const SamplerParams p = sampler_params(args);
  const LogitRules rules = logit_rules(args);
  pb::gil_scoped_release nogil;
  std::vector<float> logits;  // [n_vocab]
  {
    const std::lock_guard<std::mutex> lock(self.mu);
    if (self.session->n_past() == 0) fail("nothing to sample from: the session holds no tokens");
    logits = self.session->last_logits();
  }
  const int n_vocab = static_cast<int>(logits.size());
  rules.apply(logits.data(), n_vocab, history);
  Sampler sampler(p);
  return sampler.sample(logits.data(), n_vocab);
}

}  // namespace

void bind_sample(pb::module_& m) {
  m.def("sample", &sample, pb::arg("session"), pb::arg("args"), pb::arg("history"));
}

}  // namespace fasa::py
