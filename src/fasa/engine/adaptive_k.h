// `--lossless auto`: the number of drafts per verification, chosen from what was measured.
#pragma once

#include <algorithm>

namespace fasa {

// K for `auto`: before each verification, the K in 0 .. kMaxK that maximizes the expected tokens
// per unit of time, E(K) / (K * t_draft + t_verify(K)), where E(K) = 1 + a + ... + a^K, a is the
// acceptance rate per draft, t_draft the time of one draft step and t_verify(K) that of a
// verification of K + 1 tokens: measured for that K, else a line fitted through the measured
// ones (its attention grows with the rows). All decay over about ten
// verifications, so K follows the text. K = 0 is plain dense decoding (a verification of one
// token); while it wins, every 16th verification probes K = 2 to keep a and t_draft current.
class AdaptiveK {
 public:
  static constexpr int kMaxK = 14;  // = LosslessOptions::kMaxK (checked there)
  int next() {
    if (t_draft_ <= 0.0) return 4;  // nothing measured yet
    const double a = std::clamp(kept_ / std::max(1e-9, kept_ + rejected_), 0.0, 0.999);
    int best = 0;
    double best_rate = 1.0 / t_verify(0);
    double tokens = 1.0, ak = 1.0;  // 1 + a + ... + a^k, a^k
    for (int k = 1; k <= kMaxK; ++k) {
      ak *= a;
      tokens += ak;
      const double rate = tokens / (k * t_draft_ + t_verify(k));
      if (rate > best_rate) best_rate = rate, best = k;
    }
    if (best == 0 && ++dense_run_ % 16 == 0) return 2;
    return best;
  }
  void observe(int k, int kept, double draft_ms, double verify_ms) {
    t_verify_[k] = mix(t_verify_[k], verify_ms);
    if (k == 0) return;
    constexpr double kDecay = 0.9;  // about the last ten verifications count
    kept_ = kDecay * kept_ + kept;
    rejected_ = kDecay * rejected_ + (kept < k ? 1 : 0);
    t_draft_ = mix(t_draft_, draft_ms / k);
  }

 private:
  static double mix(double old, double x) { return old <= 0.0 ? x : 0.7 * old + 0.3 * x; }
  // Measured for k; else the least-squares line t = c0 + c1 (K + 1) through the measured Ks;
  // with one measured K only, proportional to K + 1.
  double t_verify(int k) const {
    if (t_verify_[k] > 0.0) return t_verify_[k];
    double n = 0.0, sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0;
    for (int j = 0; j <= kMaxK; ++j) {
      if (t_verify_[j] <= 0.0) continue;
      const double x = j + 1.0, y = t_verify_[j];
      n += 1.0, sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    if (n == 0.0) return 1.0;  // unreachable once a draft was timed (a verification was too)
    if (n == 1.0) return sy / sx * (k + 1);
    const double c1 = (n * sxy - sx * sy) / (n * sxx - sx * sx), c0 = (sy - c1 * sx) / n;
    return std::max(c0 + c1 * (k + 1), 1e-6);
  }
  double kept_ = 0.0, rejected_ = 0.0, t_draft_ = 0.0;
  double t_verify_[kMaxK + 1] = {};  // [K] ms of a verification of K + 1 tokens
  int dense_run_ = 0;
};

}  // namespace fasa
