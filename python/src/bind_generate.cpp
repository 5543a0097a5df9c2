// generate: `fasa run`'s loop on a session (the prompt appended to what it holds), optionally
// giving each final piece of text to a Python callable. Ctrl-C stops it (call_guard.h).
#include <pybind11/stl.h>

#include "bindings.h"
#include "call_guard.h"
#include "fasa/core/error.h"
#include "fasa/engine/lossless_options.h"
#include "stepper.h"

namespace fasa::py {

void check_free(const PySession& s) {
  if (s.streaming) fail("the session has an open stream: exhaust it or close() it first");
}

namespace {

pb::dict run_generate(PySession& self, std::vector<int32_t> prompt, const pb::dict& args,
                      const std::string& lossless, const pb::object& on_text) {
  const GenerateOptions go = generate_options(args);
  const LosslessOptions lo = parse_lossless(lossless);
  const GenerateOutcome o = guarded([&](CallGuard& guard) {
    const std::lock_guard<std::mutex> lock(self.mu);
    check_free(self);
    Stepper st(self, std::move(prompt), go, lo);
    while (!st.done()) {
      const std::string piece = st.step();
      if (!piece.empty() && !on_text.is_none()) {
        guard.with_gil([&] { on_text(utf8_text(piece)); });
      }
      guard.poll();  // (an exception on_text raised stops here)
    }
    return st.outcome();
  });
  return outcome_dict(o);
}

}  // namespace

void bind_generate(pb::module_& m) {
  m.def("generate", &run_generate, pb::arg("session"), pb::arg("prompt"), pb::arg("args"),
        pb::arg("lossless"), pb::arg("on_text"));
}

}  // namespace fasa::py
