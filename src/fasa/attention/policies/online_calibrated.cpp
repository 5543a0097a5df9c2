#include "fasa/attention/policies/online_calibrated.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <vector>

#include "fasa/attention/policy_facets.h"
#include "fasa/core/error.h"

namespace fasa {

namespace {

// The calibration made from one prefill window, shared by the copies of that prefill.
struct SharedCalibration {
  std::mutex mu;
  std::shared_ptr<const Calibration> calib;  // null until the first copy decodes
};

class OnlineCalibrated final : public AttentionPolicy,
                               public OnlineCalibrationReport,
                               public PrefillObserver,
                               public Rewindable {
 public:
  OnlineCalibrated(std::string name, const PolicyContext& ctx, OnlineCalibrationSpec spec,
                   CalibratedPolicyFactory make)
      : name_(std::move(name)),
        ctx_(ctx),
        spec_(spec),
        make_(std::move(make)),
        layers_(ctx.shape.global_layers()),
        row_of_(ctx.shape.n_layers, -1),
        appended_(ctx.shape.n_layers, 0),
        window_(ctx.shape, spec.window, spec.spread) {
    for (size_t r = 0; r < layers_.size(); ++r) row_of_[layers_[r]] = static_cast<int>(r);
    info_.window = spec.window;
    info_.prompt_queries = &window_;
  }

  std::string_view name() const override { return name_; }
  const OnlineCalibrationInfo& online_calibration() const override { return info_; }

  void on_append(const KvCache& cache, int layer, int first_slot, int n) override {
    appended_[layer] = first_slot + n;
    if (inner_) inner_->on_append(cache, layer, first_slot, n);
  }

  bool needs_prefill_queries() const override { return false; }
  void on_prefill_queries(const KvCache&, int layer, int first_slot, int n_tok,
                          const float* q) override {
    if (inner_) return;  // calibrated already: later prefills (a chat's next turn) keep it
    window_.add(row_of_[layer], first_slot, n_tok, q);
    // The window changed: a calibration made or shared from the old one no longer fits.
    if (shared_.use_count() > 1 || shared_->calib) shared_ = std::make_shared<SharedCalibration>();
  }

  // Only select_layer calibrates (a serial point); a lone select before that attends densely.
  void select(const AttnQuery& q, Selection& out) override {
    if (inner_) {
      inner_->select(q, out);
    } else {
      out.set_all();
    }
  }

  void select_layer(const AttnQuery* qs, int n, Selection* outs) override {
    if (qs[0].layer == layers_.front()) {
      if (!inner_) {
        try_calibrate(*qs[0].cache);
      } else if (refreshing() && ++since_ >= spec_.refresh) {
        refresh(*qs[0].cache);
      }
    }
    if (inner_) {
      // Refreshing: keep this step's queries (every head of the layer, contiguous from the
      // first group's) for the next calibration.
      if (refreshing()) window_.add(row_of_[qs[0].layer], qs[0].n_visible - 1, 1, qs[0].q);
      inner_->select_layer(qs, n, outs);
      return;
    }
    // No prefill seen: keep this decode step's queries (every head of the layer, contiguous
    // from the first group's) and attend densely.
    collecting_ = true;
    info_.prompt_queries = nullptr;
    window_.add(row_of_[qs[0].layer], qs[0].n_visible - 1, 1, qs[0].q);
    for (int g = 0; g < n; ++g) outs[g].set_all();
  }

  uint64_t resident_bytes() const override {
    return inner_ ? inner_->resident_bytes() + window_.bytes() : window_.bytes();
  }

  void save_point() override {
    saved_n_ = appended_[layers_.front()];
    if (inner_rewind_) inner_rewind_->save_point();
  }
  void rollback(const KvCache& cache, int n) override {
    for (int l : layers_) appended_[l] = std::min(appended_[l], n);
    if (inner_rewind_) inner_rewind_->rollback(cache, n);
    window_.truncate(n);
  }

  void copy_prefill_state_from(const AttentionPolicy& src) override {
    const auto* s = dynamic_cast<const OnlineCalibrated*>(&src);
    // Another kind of policy of this name (a calibration file's): nothing to take; this one
    // calibrates from its decode steps.
    if (!s || s->spec_.window != spec_.window || s->spec_.spread != spec_.spread || s->collecting_)
      return;
    window_ = s->window_;
    shared_ = s->shared_;
  }

 private:
  // calib_refresh: the calibration is made again from the newest queries every spec_.refresh
  // decode steps. Not under lossless drafting (a save point was set): a refresh from drafted
  // tokens' queries would make the tokens depend on the drafts.
  bool refreshing() const { return spec_.refresh > 0 && saved_n_ < 0; }

  void refresh(const KvCache& cache) {
    since_ = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const Calibration calib = calibrate_online(ctx_, spec_, window_, cache);
    info_.refresh_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++info_.refreshes;
    become(calib, cache);
  }

  // At the first global layer of a decode step: calibrate from the prefill's queries, or from
  // the collected decode queries once the window is full; or take the shared calibration.
  void try_calibrate(const KvCache& cache) {
    std::lock_guard<std::mutex> lock(shared_->mu);  // copies of one prefill calibrate once
    std::shared_ptr<const Calibration> calib = shared_->calib;
    info_.window_bytes = std::max(info_.window_bytes, window_.bytes());
    if (calib) {
      info_.reused = true;
    } else {
      // A full window, or one that holds the whole prompt (shorter than the window); else
      // (nothing, or only the tail of a prompt whose start came without its queries) collect.
      const bool whole = window_.size(0) > 0 && window_.slot(0, 0) == 0;
      if (!window_.full() && !whole) return;
      const auto t0 = std::chrono::steady_clock::now();
      calib = std::make_shared<const Calibration>(calibrate_online(ctx_, spec_, window_, cache));
      info_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      shared_->calib = calib;
    }
    info_.done = true;
    info_.prompt_queries = nullptr;
    info_.from_decode = collecting_;
    info_.queries = window_.size(0);
    become(*calib, cache);
    // A later copy takes the calibration itself (shared_); a refreshing policy keeps the
    // window and adds its decode steps' queries to it.
    if (!refreshing()) window_.clear();
  }

  // Makes the real policy from `calib` and shows it every row written so far.
  void become(const Calibration& calib, const KvCache& cache) {
    inner_ = make_(calib);
    inner_rewind_ = facet<Rewindable>(*inner_);
    FASA_CHECK(inner_->name() == name_);
    // The rows so far: as of the save point first (so that a rollback to it is exact), then
    // the drafted ones.
    for (int l : layers_) {
      const int m = saved_n_ >= 0 ? std::min(saved_n_, appended_[l]) : appended_[l];
      if (m > 0) inner_->on_append(cache, l, 0, m);
    }
    if (saved_n_ >= 0 && inner_rewind_) inner_rewind_->save_point();
    for (int l : layers_) {
      const int m = saved_n_ >= 0 ? std::min(saved_n_, appended_[l]) : appended_[l];
      if (appended_[l] > m) inner_->on_append(cache, l, m, appended_[l] - m);
    }
  }

  std::string name_;
  PolicyContext ctx_;
  OnlineCalibrationSpec spec_;
  CalibratedPolicyFactory make_;
  std::vector<int> layers_;    // [n_global]
  std::vector<int> row_of_;    // [n_layers] index in layers_, -1 for sliding-window layers
  std::vector<int> appended_;  // [n_layers] rows shown by on_append so far
  QueryWindow window_;
  bool collecting_ = false;  // the window holds decode-step queries (no prefill was seen)
  int saved_n_ = -1;         // rows at the last save point, -1: none
  int since_ = 0;            // decode steps since the calibration was last made
  std::shared_ptr<SharedCalibration> shared_ = std::make_shared<SharedCalibration>();
  std::unique_ptr<AttentionPolicy> inner_;  // the real policy, once calibrated
  Rewindable* inner_rewind_ = nullptr;      // its Rewindable facet
  OnlineCalibrationInfo info_;
};

}  // namespace

std::unique_ptr<AttentionPolicy> make_online_calibrated_policy(std::string name,
                                                               const PolicyContext& ctx,
                                                               OnlineCalibrationSpec spec,
                                                               CalibratedPolicyFactory make) {
  return std::make_unique<OnlineCalibrated>(std::move(name), ctx, spec, std::move(make));
}

}  // namespace fasa
