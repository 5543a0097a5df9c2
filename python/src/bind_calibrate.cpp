// calibrate: FASA's offline calibration, as `fasa calibrate` runs it, into a calibration file.
// Progress goes to a Python callable; Ctrl-C stops it (call_guard.h).
#include <pybind11/stl.h>

#include "bindings.h"
#include "call_guard.h"
#include "fasa/attention/calibration.h"
#include "fasa/attention/frequency_chunks.h"
#include "fasa/calibrate/calibrator.h"
#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/io/atomic_file.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa::py {

namespace {

// Writes the calibration of `text` (UTF-8 bytes; `text_name` recorded in the file) to `out`.
// Returns the number of tokens of the text.
size_t run_calibrate(const PyModel& m, const std::string& text, const std::string& text_name,
                     const std::string& out, int tokens, int samples, int steps, int k,
                     double compound, const std::string& fc_layout,
                     const std::function<void(const CalibrateProgress&)>& progress) {
  CalibrateOptions o;
  o.tokens = tokens;
  o.samples = samples;
  o.steps = steps;
  o.k = k;
  o.compound = compound;
  o.fc_layout = parse_fc_layout(fc_layout);
  // The output's temporary file is made before any work (a missing directory fails now).
  AtomicFile file(out);
  if (const int64_t bad = find_invalid_utf8(text); bad >= 0) {
    fail("calibration text '{}' is not valid UTF-8 (byte offset {})", text_name, bad);
  }
  const auto ids = m.model->require_tokenizer().encode(text, true, false);
  Calibration c = calibrate(m.model, ids, o, progress);
  c.text_name = text_name;
  c.text_sha256 = sha256_hex(text);
  file.write(calibration_json(c));
  file.commit();
  return ids.size();
}

}  // namespace

void bind_calibrate(pb::module_& m) {
  m.def(
      "calibrate",
      [](const PyModel& model, const Source& text, const std::string& text_name,
         const std::string& out, int tokens, int samples, int steps, int k, double compound,
         const std::string& fc_layout, const pb::object& fn) {
        return guarded([&](CallGuard& guard) {
          // Called on the worker threads too (the compound sets): each stops at its next job.
          auto progress = [&](const CalibrateProgress& p) {
            if (!fn.is_none()) guard.with_gil([&] { fn(p.phase, p.done, p.total, p.share); });
            guard.poll();
          };
          return run_calibrate(model, text.bytes, text_name, out, tokens, samples, steps, k,
                               compound, fc_layout, progress);
        });
      },
      pb::arg("model"), pb::arg("text"), pb::arg("text_name"), pb::arg("out"), pb::arg("tokens"),
      pb::arg("samples"), pb::arg("steps"), pb::arg("k"), pb::arg("compound"), pb::arg("fc_layout"),
      pb::arg("progress"));
}

}  // namespace fasa::py
