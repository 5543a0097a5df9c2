// Which KV policy a request runs: the server's default spec (from its command line) with the
// request's "fasa" object applied, and the server's calibration file for calibrated policies.
#pragma once

#include <string>

#include "fasa/attention/policy.h"
#include "fasa/server/api.h"

namespace fasa::server {

struct PolicyDefaults {
  std::string spec = "full";  // name[:key=value,...] from the command line
  std::string calib;          // --calib: given to calibrated policies a request picks ("" = none)
};

// The spec a request runs:
//  - no "fasa" object: the default spec;
//  - "policy" absent or naming the default's policy: the default's options, then the request's;
//  - another policy: its own options only (and the server's calib= if it is calibrated).
// Then checks it by making the policy once: throws ApiError(400, param "fasa") with the
// policy's own message (unknown policy or option, bad value, missing calibration).
std::string choose_policy(const PolicyDefaults& defaults, const PolicyRequest& request,
                          const PolicyContext& ctx);

// A spec as clients see it: a calib= file by its file name, never the server's path to it
// ("fasa:budget=256,calib=/srv/c/emma.json" -> "fasa:budget=256,calib=emma.json").
std::string shown_spec(const std::string& spec);

}  // namespace fasa::server
