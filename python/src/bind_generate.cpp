// generate: `fasa run`'s loop on a session (the prompt appended to what it holds), optionally
// streaming each final piece of text to a Python callable (called with the GIL held).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/lossless.h"
#include "fasa/engine/lossless_options.h"

namespace fasa::py {

namespace {

pb::dict run_generate(PySession& self, const std::vector<int32_t>& prompt, int n_predict,
                      float temp, int top_k, float top_p, float min_p, uint64_t seed,
                      const std::vector<std::string>& stop, const std::string& lossless,
                      const pb::object& on_text) {
  GenerateOptions go;
  go.n_predict = n_predict;
  go.sampler.temp = temp;
  go.sampler.top_k = top_k;
  go.sampler.top_p = top_p;
  go.sampler.min_p = min_p;
  go.sampler.seed = seed;
  go.sampler.validate();
  go.stop = stop;
  const LosslessOptions lo = parse_lossless(lossless);
  std::function<void(std::string_view)> emit;
  if (!on_text.is_none()) {
    emit = [&on_text](std::string_view piece) {
      pb::gil_scoped_acquire gil;
      on_text(utf8_text(std::string(piece)));  // a Python exception propagates as is
    };
  }
  GenerateResult r;
  LosslessStats ls;
  AttnStats attn;
  {
    pb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(self.mu);
    const AttnStats before = self.session->attn_stats();
    r = generate_lossless(*self.session, prompt, go, lo, emit, &ls);
    attn = self.session->attn_stats() - before;
  }
  pb::dict d;
  d["text"] = utf8_text(r.text);
  d["tokens"] = r.tokens;
  d["stop_reason"] = name(r.stop_reason);
  d["n_prompt"] = r.n_prompt;
  d["prefill_ms"] = r.prefill_ms;
  d["decode_ms"] = r.decode_ms;
  d["attn"] = attn_stats_dict(attn);
  if (lo.k > 0) {
    d["lossless"] =
        pb::dict(pb::arg("verifications") = ls.verifications, pb::arg("drafted") = ls.drafted,
                 pb::arg("accepted") = ls.accepted, pb::arg("acceptance") = ls.acceptance());
  }
  return d;
}

}  // namespace

void bind_generate(pb::module_& m) {
  m.def("generate", &run_generate, pb::arg("session"), pb::arg("prompt"), pb::arg("n_predict"),
        pb::arg("temp"), pb::arg("top_k"), pb::arg("top_p"), pb::arg("min_p"), pb::arg("seed"),
        pb::arg("stop"), pb::arg("lossless"), pb::arg("on_text"));
}

}  // namespace fasa::py
