// `--lossless off|auto|K`: the setting alone (engine/lossless.h runs it), so that request and
// flag parsers need nothing else of the engine.
#pragma once

#include <string>

namespace fasa {

struct LosslessOptions {
  int k = 0;              // drafts per verification; 0 = off (plain decoding)
  bool adaptive = false;  // `auto`: K follows the measured acceptance rate and step times
  // A verification holds K + 1 tokens, at most Session::kMaxVerify (checked in lossless.cpp).
  static constexpr int kMaxK = 14;
};

// "off" | "auto" | "K" (1 .. kMaxK); throws fasa::Error naming the value otherwise.
LosslessOptions parse_lossless(const std::string& value);
// "off", "auto" or the number.
std::string lossless_name(const LosslessOptions& o);

}  // namespace fasa
