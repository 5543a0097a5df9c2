// calib=online for the calibrated policies (fasa, double-sparsity, and pyramidkv+fasa's fasa):
// the policy calibrates on the prompt it answers instead of a calibration file.
//
// During the dense prefill it keeps the last `window` prompt positions' queries of every global
// layer (QueryWindow, online_calibration.h). At the first decode step it measures the
// calibration from them against the cache's keys (calibrate_online), makes the real policy from
// it with `make`, shows that policy every row written so far, and from then on is that policy.
// Where no prefill was seen (a prefix restored from a prompt-cache file, a synthetic fill, a copy
// of another policy's session) it attends densely over its first `window` decode steps while it
// keeps their queries, then calibrates from them (OnlineCalibrationInfo::from_decode).
//
// A copy of its prefill (Session::copy_prefix_from: eval's shared prefill, the server's prompt
// cache) takes the window and a handle on the calibration made from it, so the first of the
// copies that decodes calibrates and the others reuse the same calibration (the copies hold the
// same prefix, so it is the one each would make).
//
// Lossless drafting: a save point before the calibration is made still holds at rollback (the
// real policy is made as of the save point, then shown the drafted rows); queries of drafted
// tokens kept while collecting are dropped at rollback. The calibration itself, once made, stays.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "fasa/attention/calibration.h"
#include "fasa/attention/online_calibration.h"
#include "fasa/attention/policy.h"

namespace fasa {

using CalibratedPolicyFactory = std::function<std::unique_ptr<AttentionPolicy>(const Calibration&)>;

// `name`: the real policy's name() (make's policy must answer the same). make may throw
// fasa::Error only for a calibration it cannot serve, which an online one never is.
std::unique_ptr<AttentionPolicy> make_online_calibrated_policy(std::string name,
                                                               const PolicyContext& ctx,
                                                               OnlineCalibrationSpec spec,
                                                               CalibratedPolicyFactory make);

}  // namespace fasa
