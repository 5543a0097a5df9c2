// Offline FASA calibration: run the model over calibration text and, at decode-step queries
// (query length 1 after a dense prefill of the preceding tokens), measure every frequency
// chunk's Contextual Agreement with the full head, per (layer, query head), and choose the
// compound CA sets (greedily, over all the queries together) per query head and per kv head.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "fasa/attention/calibration.h"

namespace fasa {

class Model;

struct CalibrateOptions {
  int k = 256;        // calibration window K: top-K compared
  int samples = 4;    // windows of the text, evenly spaced
  int tokens = 1024;  // dense prefill per sample (the context the queries see)
  int steps = 32;     // teacher-forced decode steps (queries) per sample
  FcLayout fc_layout = FcLayout::Rope;
  // Compound CA sets (attention/compound_greedy.h): FCs per set, a count or a fraction < 1 of
  // the FCs (rounded, at least 1); 0 skips them (the file is then version 3). The default covers
  // the default n_tip (0.25); the greedy's cost grows with it (about 1.7x at 0.5).
  double compound = 0.25;
};

// Where a calibration run is: `done` of `total` units of its phase, "sample" (the prefills and
// decode steps over the text) then "compound set" (the greedy's jobs, one per query head and
// one per kv head of each covered layer).
struct CalibrateProgress {
  const char* phase = "sample";
  int done = 0, total = 0;
  double share = 0.0;  // of the phase's work done (compound sets: weighted by their queries)
};

// `progress` after each sample and each compound-set job (may be null; calls never overlap,
// but those of the second phase come from the worker threads; one that throws abandons the
// calibration, its exception reaching the caller). Throws fasa::Error when the text is too short
// or an option is out of range.
Calibration calibrate(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& tokens,
                      const CalibrateOptions& opts,
                      const std::function<void(const CalibrateProgress&)>& progress);

}  // namespace fasa
