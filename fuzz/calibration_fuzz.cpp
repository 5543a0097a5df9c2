// Fuzz target: the calibration file reader (calibrate/calibration.cpp, load_calibration) and the
// policies that take one. Contract: any bytes either load or throw fasa::Error; a calibration
// that loads is consistent (covered layers ascending and in range, every (layer, head) has its
// n_fc mean CAs and a ranking that is a permutation, channel importances per head_dim), passes
// check_calibration against a model of its own shape, and builds the calibrated policies (or
// they refuse it with fasa::Error).
#include <algorithm>

#include "fasa/attention/calibration.h"
#include "fasa/attention/policy.h"
#include "fasa/core/error.h"
#include "fuzz_util.h"

namespace fasa::fuzz {
namespace {

void check_consistent(const Calibration& c) {
  FASA_FUZZ_EXPECT(!c.layers.empty() && std::is_sorted(c.layers.begin(), c.layers.end()));
  FASA_FUZZ_EXPECT(c.layers.front() >= 0 && c.layers.back() < c.n_layers);
  const size_t per_layer = static_cast<size_t>(c.n_heads) * c.n_fc();
  FASA_FUZZ_EXPECT(c.mean_ca.size() == c.layers.size() * per_layer);
  FASA_FUZZ_EXPECT(c.ranked.size() == c.mean_ca.size());
  for (const int layer : c.layers) {
    FASA_FUZZ_EXPECT(c.covers(layer));
    for (int h = 0; h < c.n_heads; ++h) {
      std::vector<int32_t> r(c.rank(layer, h), c.rank(layer, h) + c.n_fc());
      std::sort(r.begin(), r.end());
      for (int i = 0; i < c.n_fc(); ++i) FASA_FUZZ_EXPECT(r[i] == i);
      if (c.has_channel_importance()) {
        const std::vector<int> heavy = c.heavy_channels(layer, h, c.head_dim / 2);
        for (const int d : heavy) FASA_FUZZ_EXPECT(d >= 0 && d < c.head_dim);
      }
    }
  }
  layer_list_text(c.layers);
}

// A model context of the calibration's own shape: every covered layer global, the others
// sliding-window.
PolicyContext own_context(const Calibration& c) {
  PolicyContext ctx;
  ctx.arch = c.arch;
  ctx.shape.n_layers = c.n_layers;
  ctx.shape.n_heads = c.n_heads;
  ctx.shape.n_kv_heads = c.n_kv_heads;
  ctx.shape.head_dim = c.head_dim;
  ctx.shape.layer_window.assign(c.n_layers, 64);
  for (const int l : c.layers) ctx.shape.layer_window[l] = 0;
  ctx.rope_layout = c.rope_layout;
  ctx.rope_dim = c.head_dim;
  ctx.model_sha256 = [sha = c.model_sha256] { return sha; };
  return ctx;
}

void run(const uint8_t* data, size_t size) {
  const std::string& path = write_scratch(data, size);
  Calibration c;
  try {
    c = load_calibration(path);
  } catch (const Error&) {
    return;
  }
  check_consistent(c);
  const PolicyContext ctx = own_context(c);
  check_calibration(c, ctx, path);            // must not throw: it describes that model
  if (c.n_heads % c.n_kv_heads != 0) return;  // no such model
  for (const char* policy : {"fasa", "double-sparsity"}) {
    try {
      make_policy(policy, ctx, {{"calib", path}, {"budget", "16"}});
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace fasa::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fasa::fuzz::run(data, size);
  return 0;
}
