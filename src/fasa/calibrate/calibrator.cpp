#include "fasa/calibrate/calibrator.h"

#include <algorithm>
#include <cmath>

#include "fasa/attention/compound_sets.h"
#include "fasa/attention/policy.h"
#include "fasa/core/error.h"
#include "fasa/core/workspace.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"

namespace fasa {

namespace {

// Attends densely (the model's outputs are untouched) while measuring, for every query head at
// every decode step, the agreement of each FC's token ranking with the full head's. Only global
// layers reach a policy (sliding-window layers attend over their window), so only they are
// measured.
class AgreementObserver final : public AttentionPolicy {
 public:
  // recorder: null, or where each query also goes (compound sets).
  AgreementObserver(const AttnShape& shape, std::vector<FcDims> fcs, int k,
                    CompoundRecorder* recorder)
      : shape_(shape),
        recorder_(recorder),
        fcs_(std::move(fcs)),
        k_(k),
        layers_(shape.global_layers()),
        row_of_layer_(shape.n_layers, -1),
        sums_(layers_.size() * shape.n_heads * fcs_.size(), 0.0),
        channel_sums_(layers_.size() * shape.n_heads * shape.head_dim, 0.0),
        counts_(layers_.size() * shape.n_heads, 0) {
    for (size_t i = 0; i < layers_.size(); ++i) row_of_layer_[layers_[i]] = static_cast<int>(i);
  }

  const std::vector<int>& layers() const { return layers_; }

  std::string_view name() const override { return "calibrate"; }

  // Each call touches only the rows of its own (layer, kv_head) group: safe in parallel.
  void select(const AttnQuery& q, Selection& out) override {
    out.set_all();
    const int hd = shape_.head_dim, n_fc = static_cast<int>(fcs_.size());
    FASA_CHECK(q.cache->type() == KvType::F32);
    const auto* keys = static_cast<const float*>(q.cache->k_rows(q.layer, q.kv_head));
    const int layer_row = row_of_layer_[q.layer];
    FASA_CHECK(layer_row >= 0);  // a global layer
    ScratchFrame f;
    float* ca = f.take<float>(n_fc);  // [n_fc]
    for (int g = 0; g < q.n_group; ++g) {
      const int head = q.kv_head * q.n_group + g;
      fc_agreement(q.q + g * hd, keys, q.n_visible, hd, fcs_, k_, ca);
      const size_t row = static_cast<size_t>(layer_row) * shape_.n_heads + head;
      for (int i = 0; i < n_fc; ++i) sums_[row * n_fc + i] += ca[i];
      const float* qh = q.q + g * hd;
      const float* own = keys + static_cast<size_t>(q.n_visible - 1) * hd;  // the token's key
      for (int c = 0; c < hd; ++c) channel_sums_[row * hd + c] += std::fabs(qh[c] * own[c]);
      counts_[row] += 1;
      if (recorder_) recorder_->add_query(layer_row, head, q.n_visible, qh);
    }
  }

  // Mean CA per (global layer, head, fc).  [n_global, n_heads, n_fc]
  std::vector<float> means() const { return per_query_means(sums_, fcs_.size()); }
  // Mean |q_c k_c| per (global layer, head, key dim).  [n_global, n_heads, head_dim]
  std::vector<float> channel_means() const {
    return per_query_means(channel_sums_, shape_.head_dim);
  }

 private:
  // sums [rows, width] divided by each row's query count.
  std::vector<float> per_query_means(const std::vector<double>& sums, size_t width) const {
    std::vector<float> m(sums.size());
    for (size_t row = 0; row < counts_.size(); ++row) {
      for (size_t i = 0; i < width; ++i) {
        m[row * width + i] =
            counts_[row] ? static_cast<float>(sums[row * width + i] / counts_[row]) : 0.0f;
      }
    }
    return m;
  }

  AttnShape shape_;
  CompoundRecorder* recorder_;
  std::vector<FcDims> fcs_;
  int k_;
  std::vector<int> layers_;           // [n_global] the layers measured
  std::vector<int> row_of_layer_;     // [n_layers] index in layers_, -1 for sliding-window layers
  std::vector<double> sums_;          // [n_global, n_heads, n_fc]
  std::vector<double> channel_sums_;  // [n_global, n_heads, head_dim] sum of |q_c k_c|
  std::vector<int64_t> counts_;       // [n_global, n_heads]
};

// Bad options, a model without global layers, or a text shorter than one sample fail here.
void check_options(const ModelConfig& mc, const AttnShape& shape, int64_t n_text,
                   const CalibrateOptions& o) {
  if (o.samples < 1) fail("--samples must be >= 1 (got {})", o.samples);
  if (o.steps < 1) fail("--steps must be >= 1 (got {})", o.steps);
  if (o.k < 1) fail("--k must be >= 1 (got {})", o.k);
  if (!(o.compound >= 0.0) || (o.compound > 1.0 && o.compound != std::floor(o.compound))) {
    fail("--compound must be 0, a count of FCs or a fraction in (0, 1) (got {})", o.compound);
  }
  if (o.tokens <= o.k) {
    fail("--tokens {} must exceed --k {} (the queries rank that many cached tokens)", o.tokens,
         o.k);
  }
  const int64_t per_sample = int64_t{o.tokens} + o.steps;
  if (per_sample > mc.n_ctx_max()) {
    fail("--tokens + --steps = {} exceeds the model's context length {}", per_sample,
         mc.n_ctx_max());
  }
  if (shape.global_layers().empty()) {
    fail(
        "every layer of this model is a sliding-window layer: FASA has no global layer to "
        "calibrate");
  }
  if (n_text < per_sample) {
    fail("the calibration text has {} tokens; one sample needs --tokens + --steps = {}", n_text,
         per_sample);
  }
}

// The file's description of the model and the run (everything but the statistics).
Calibration calibration_header(const Model& model, const CalibrateOptions& o, int64_t n_text) {
  const ModelConfig& mc = model.config();
  const int64_t per_sample = int64_t{o.tokens} + o.steps;
  Calibration c;
  c.model_sha256 = model_identity(model);
  c.model_name = mc.name;
  c.arch = mc.arch;
  c.n_layers = mc.n_layers;
  c.n_heads = mc.n_heads;
  c.n_kv_heads = mc.n_kv_heads;
  c.head_dim = mc.head_dim;
  c.rope_layout = mc.rope_layout;
  c.fc_layout = o.fc_layout;
  c.fcs = fc_dims(mc.rope_layout, o.fc_layout, mc.head_dim, mc.rope_dim);
  if (o.fc_layout == FcLayout::Rope) {  // FC i is rotation pair i
    const RopeTable& rope = model.rope_table(static_cast<int>(per_sample));
    c.fc_freq = rope.freqs;
    c.rope_mscale = rope.mscale;
    c.rope_n_ctx = static_cast<int>(per_sample);
  }
  c.k = o.k;
  c.n_samples = o.samples;
  c.tokens_per_sample = o.tokens;
  c.steps = o.steps;
  c.text_tokens = n_text;
  return c;
}

}  // namespace

Calibration calibrate(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& tokens,
                      const CalibrateOptions& o,
                      const std::function<void(const CalibrateProgress&)>& progress) {
  const ModelConfig& mc = model->config();
  const AttnShape shape{mc.n_layers, mc.n_heads, mc.n_kv_heads, mc.head_dim, mc.layer_window};
  const int64_t n_text = static_cast<int64_t>(tokens.size());
  check_options(mc, shape, n_text, o);
  const int64_t per_sample = int64_t{o.tokens} + o.steps;
  Calibration c = calibration_header(*model, o, n_text);

  const int n_fc = c.n_fc();
  const int n_compound = o.compound == 0.0 ? 0
                         : o.compound < 1.0
                             ? std::clamp(static_cast<int>(std::lround(o.compound * n_fc)), 1, n_fc)
                             : std::min(static_cast<int>(o.compound), n_fc);
  std::unique_ptr<CompoundRecorder> recorder;
  if (n_compound > 0) recorder = std::make_unique<CompoundRecorder>(shape, shape.global_layers());
  AgreementObserver observer(shape, c.fcs, o.k, recorder.get());
  SessionOptions so;
  so.n_ctx = static_cast<int>(per_sample);
  so.kv_type = KvType::F32;  // exact keys for the rankings
  so.external_policy = &observer;
  Session session(model, so);
  // Evenly spaced windows over the text (overlapping only when the text is short).
  const int64_t stride = o.samples > 1 ? (n_text - per_sample) / (o.samples - 1) : 0;
  for (int s = 0; s < o.samples; ++s) {
    const auto begin = tokens.begin() + s * stride;
    session.reset();
    session.prefill(std::vector<int32_t>(begin, begin + o.tokens));
    for (int i = 0; i < o.steps; ++i) session.decode(begin[o.tokens + i]);
    if (recorder) recorder->end_sample(session.cache());
    if (progress) progress({"sample", s + 1, o.samples});
  }
  c.layers = observer.layers();
  c.mean_ca = observer.means();
  c.channel_importance = observer.channel_means();
  c.rank_all();
  if (recorder) {
    recorder->fill(c, n_compound, [&progress](int done, int total, double share) {
      if (progress) progress({"compound set", done, total, share});
    });
  }
  return c;
}

}  // namespace fasa
