#include "fasa/model/rope.h"

#include <algorithm>
#include <cmath>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/kernels/ops.h"

namespace fasa {

const char* rope_scaling_name(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::None: return "none";
    case RopeScalingType::Linear: return "linear";
    case RopeScalingType::Yarn: return "yarn";
    case RopeScalingType::LongRope: return "longrope";
  }
  return "?";
}

namespace {

// A key this engine reads only to check that it holds the value it assumes.
void require_default(const GgufFile& f, const std::string& key, double want, const char* why) {
  if (f.find(key) == nullptr) return;
  const double v = f.get_float(key);
  if (!(std::fabs(v - want) <= 1e-6 * std::max(1.0, std::fabs(want)))) {  // NaN too
    fail("{}: metadata '{}' = {} is not supported (only {}: {})", f.path(), key, v, want, why);
  }
}

}  // namespace

RopeScaling read_rope_scaling(const GgufFile& f, const std::string& arch, int n_ctx_train) {
  const std::string p = arch + ".rope.";
  RopeScaling s;
  // llama.cpp reads a missing type as "linear" (a bare factor then scales linearly).
  const bool has_type = f.find(p + "scaling.type") != nullptr;
  const std::string type = f.get_string_or(p + "scaling.type", "linear");
  if (type == "none") {
    s.type = RopeScalingType::None;
  } else if (type == "linear") {
    s.type = RopeScalingType::Linear;
  } else if (type == "yarn") {
    s.type = RopeScalingType::Yarn;
  } else if (type == "longrope") {
    s.type = RopeScalingType::LongRope;
  } else {
    fail("{}: '{}scaling.type' = '{}' is not supported (supported: none, linear, yarn, longrope)",
         f.path(), p, type);
  }
  double factor = f.get_float_or(p + "scaling.factor", 0.0);
  if (factor == 0.0) factor = f.get_float_or(p + "scale_linear", 0.0);  // the older key
  if (factor != 0.0 && s.type != RopeScalingType::None) {
    if (!(factor >= 1.0 && factor <= 1024.0)) {
      fail("{}: RoPE scaling factor {} must be in [1, 1024]", f.path(), factor);
    }
    s.freq_scale = static_cast<float>(1.0 / factor);
  }
  if (!has_type && factor == 0.0) s.type = RopeScalingType::None;
  // Phi-3 files declare no type: their long/short factor tensors are the scaling (LongRoPE).
  if (!has_type && f.find_tensor("rope_factors_long.weight") != nullptr) {
    s.type = RopeScalingType::LongRope;
  }
  if (s.type == RopeScalingType::Linear && s.freq_scale == 1.0f) s.type = RopeScalingType::None;
  if (s.type == RopeScalingType::Yarn && factor == 0.0) {
    fail("{}: '{}scaling.type' is yarn but '{}scaling.factor' is missing", f.path(), p, p);
  }
  s.n_ctx_orig = n_ctx_train;
  if (f.find(p + "scaling.original_context_length") != nullptr) {
    const int64_t v = f.get_int(p + "scaling.original_context_length");
    if (v < 1 || v > (int64_t{1} << 24)) {
      fail("{}: '{}scaling.original_context_length' = {} is out of range", f.path(), p, v);
    }
    s.n_ctx_orig = static_cast<int>(v);
  }
  s.attn_factor = static_cast<float>(f.get_float_or(p + "scaling.attn_factor", 1.0));
  if (!(s.attn_factor > 0.0f && s.attn_factor <= 16.0f)) {
    fail("{}: '{}scaling.attn_factor' = {} must be in (0, 16]", f.path(), p, s.attn_factor);
  }
  // YaRN's tunables: llama.cpp ignores them for these families and uses its defaults, so a file
  // that sets other values would mean something neither engine computes.
  require_default(f, p + "scaling.yarn_ext_factor", 1.0, "YaRN's ramp is applied in full");
  require_default(f, p + "scaling.yarn_attn_factor", 1.0, "the magnitude is 1 + 0.1 ln(factor)");
  require_default(f, p + "scaling.yarn_beta_fast", 32.0, "llama.cpp's ramp start");
  require_default(f, p + "scaling.yarn_beta_slow", 1.0, "llama.cpp's ramp end");
  require_default(f, p + "scaling.yarn_log_multiplier", 0.0, "DeepSeek-V2-style mscale");
  return s;
}

RopeTable make_rope_table(float base, int rope_dim, const RopeScaling& s,
                          const RopeFactorTables& tables, bool long_factors, bool scaled) {
  const int n_pairs = rope_dim / 2;
  RopeTable t;
  t.freqs.resize(n_pairs);
  rope_freqs(base, rope_dim, t.freqs.data());  // base^(-2i / rope_dim)
  if (!scaled) return t;
  const float* factors = nullptr;
  if (tables.freq_factors != nullptr) {
    factors = tables.freq_factors;
    t.factors = "rope_freqs";
  } else if (tables.long_factors != nullptr && long_factors) {
    factors = tables.long_factors;
    t.factors = "long";
  } else if (tables.short_factors != nullptr) {
    factors = tables.short_factors;
    t.factors = "short";
  }
  if (factors != nullptr) {
    for (int i = 0; i < n_pairs; ++i) t.freqs[i] /= factors[i];
  }
  if (s.type == RopeScalingType::None) {
    t.mscale = s.attn_factor;
    return t;
  }
  const float fs = s.freq_scale;
  if (s.type != RopeScalingType::Yarn) {
    for (float& f : t.freqs) f *= fs;
    t.mscale = s.attn_factor;
    return t;
  }
  // YaRN: interpolate the slow pairs, keep the fast ones, ramp in between.
  // In float, as llama.cpp computes them: floor/ceil of a value near an integer could differ.
  auto corr_dim = [&](float beta) {
    return static_cast<float>(rope_dim) *
           std::log(static_cast<float>(s.n_ctx_orig) / (beta * 2.0f * static_cast<float>(M_PI))) /
           (2.0f * std::log(base));
  };
  const double lo = std::max(0.0f, std::floor(corr_dim(s.beta_fast)));
  const double hi = std::min(static_cast<float>(rope_dim - 1), std::ceil(corr_dim(s.beta_slow)));
  for (int i = 0; i < n_pairs; ++i) {
    const double y = (i - lo) / std::max(0.001, hi - lo);
    const double ramp = 1.0 - std::min(1.0, std::max(0.0, y));
    t.freqs[i] = static_cast<float>(t.freqs[i] * (fs * (1.0 - ramp) + ramp));
  }
  t.mscale = static_cast<float>((1.0 + 0.1 * std::log(1.0 / fs)) * s.attn_factor);
  return t;
}

}  // namespace fasa
