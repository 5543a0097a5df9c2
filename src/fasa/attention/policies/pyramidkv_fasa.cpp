// `pyramidkv+fasa`: eviction, then selection. PyramidKV (pyramidkv.cpp) evicts after the prefill
// to a per-layer pyramid of `keep` slots on average (its kept set slides with generation as
// usual), and FASA-C (fasa.cpp) then selects `budget` of the kept slots per step: TIP scores the
// kept slots only (AttnQuery::candidates). Options: keep=K (required), window, kernel, beta and
// recompress go to pyramidkv (keep as its budget; gqa=shared there, one kept list per kv head);
// every other option goes to fasa (budget required; variant=c only, as PyramidKV's
// votes read whole keys from RAM). When PyramidKV keeps every slot (keep covering the context)
// this is plain fasa, bit for bit.
#include <vector>

#include "fasa/attention/policy_facets.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"

namespace fasa {

namespace {

// Its facets: PyramidKV's prefill votes and eviction, both policies' rewind, and fasa's online
// calibration where fasa calibrates online.
class EvictThenSelect final : public AttentionPolicy,
                              public PrefillObserver,
                              public EvictingPolicy,
                              public Rewindable,
                              public OnlineCalibrationReport {
 public:
  EvictThenSelect(std::unique_ptr<AttentionPolicy> evict, std::unique_ptr<AttentionPolicy> pick)
      : evict_(std::move(evict)),
        pick_(std::move(pick)),
        evict_prefill_(facet<PrefillObserver>(*evict_)),
        evict_eviction_(facet<EvictingPolicy>(*evict_)),
        evict_rewind_(facet<Rewindable>(*evict_)),
        pick_prefill_(facet<PrefillObserver>(*pick_)),
        pick_rewind_(facet<Rewindable>(*pick_)),
        pick_online_(facet<OnlineCalibrationReport>(*pick_)) {
    FASA_CHECK(evict_prefill_ && evict_eviction_);  // PyramidKV votes over the prefill, evicts
  }

  std::string_view name() const override { return "pyramidkv+fasa"; }
  bool offers(Facet f) const override { return f != Facet::OnlineCalibration || pick_online_; }
  void on_append(const KvCache& c, int layer, int first, int n) override {
    evict_->on_append(c, layer, first, n);
    pick_->on_append(c, layer, first, n);
  }
  void on_prefill_queries(const KvCache& c, int layer, int first, int n, const float* q) override {
    evict_prefill_->on_prefill_queries(c, layer, first, n, q);
    if (pick_prefill_) pick_prefill_->on_prefill_queries(c, layer, first, n, q);
  }
  const OnlineCalibrationInfo& online_calibration() const override {
    return pick_online_->online_calibration();
  }
  void copy_prefill_state_from(const AttentionPolicy& src) override {
    const auto* s = dynamic_cast<const EvictThenSelect*>(&src);
    if (!s) {
      fail("policy 'pyramidkv+fasa' cannot take the prefill state of policy '{}'", src.name());
    }
    evict_prefill_->copy_prefill_state_from(*s->evict_);
    if (pick_prefill_) pick_prefill_->copy_prefill_state_from(*s->pick_);  // fasa's calib=online
  }
  void save_point() override {
    if (evict_rewind_) evict_rewind_->save_point();
    if (pick_rewind_) pick_rewind_->save_point();
  }
  void rollback(const KvCache& c, int n) override {
    if (evict_rewind_) evict_rewind_->rollback(c, n);
    if (pick_rewind_) pick_rewind_->rollback(c, n);
  }
  uint64_t resident_bytes() const override {
    return evict_->resident_bytes() + pick_->resident_bytes();
  }
  uint64_t evicted_rows() const override { return evict_eviction_->evicted_rows(); }
  bool kept_slots(int layer, int kv_head, int* horizon, std::vector<int32_t>* kept) const override {
    return evict_eviction_->kept_slots(layer, kv_head, horizon, kept);
  }

  void select(const AttnQuery& q, Selection& out) override {
    Selection kept;
    evict_->select(q, kept);
    AttnQuery c = q;
    restrict_to(kept, c);
    pick_->select(c, out);
  }

  void select_layer(const AttnQuery* qs, int n, Selection* outs) override {
    std::vector<Selection> kept(n);  // [n_kv_heads]
    evict_->select_layer(qs, n, kept.data());
    std::vector<AttnQuery> cs(qs, qs + n);
    for (int g = 0; g < n; ++g) restrict_to(kept[g], cs[g]);
    pick_->select_layer(cs.data(), n, outs);
  }

 private:
  // PyramidKV keeping every slot leaves the choice free (plain fasa).
  static void restrict_to(const Selection& kept, AttnQuery& q) {
    if (kept.all) return;
    q.candidates = kept.slots.data();
    q.n_candidates = static_cast<int>(kept.slots.size());
  }

  std::unique_ptr<AttentionPolicy> evict_, pick_;
  PrefillObserver* evict_prefill_;
  EvictingPolicy* evict_eviction_;
  Rewindable* evict_rewind_;
  PrefillObserver* pick_prefill_;  // fasa's with calib=online, else null
  Rewindable* pick_rewind_;
  const OnlineCalibrationReport* pick_online_;  // the same
};

// The options that go to pyramidkv besides keep (its budget); every other one goes to fasa.
constexpr const char* kPyramidKeys[] = {"window", "kernel", "beta", "recompress"};

bool goes_to_pyramid(const std::string& key) {
  for (const char* k : kPyramidKeys) {
    if (key == k) return true;
  }
  return false;
}

}  // namespace

// Help and docs only: the values are parsed by the two policies' own tables (errors name them).
const OptionTable& pyramidkv_fasa_options() {
  static const OptionTable t = [] {
    OptionTable t{"pyramidkv+fasa", {}};
    t.rows.push_back({"keep", OptionType::Budget, "K", nullptr,
                      "slots PyramidKV keeps per layer on average (its budget)"});
    for (const char* k : kPyramidKeys) t.rows.push_back(*pyramidkv_options().find(k));
    for (PolicyOption r : fasa_options().rows) {
      const std::string key = r.key;
      // variant m's, and mean_value (the mean of V over the kept slots is not kept)
      if (key == "offload_dir" || key == "prefetch" || key == "row_cache" || key == "mean_value") {
        continue;
      }
      if (key == "variant") {
        r.value = "c";
        r.help = "FASA-C only: PyramidKV's votes read whole keys from RAM";
      }
      t.rows.push_back(r);
    }
    return t;
  }();
  return t;
}

std::unique_ptr<AttentionPolicy> make_pyramidkv_fasa_policy(const PolicyContext& ctx,
                                                            const PolicyOptions& opts) {
  PolicyOptions pyramid, fasa;
  for (const auto& [key, value] : opts) {
    if (key == "keep") {
      pyramid["budget"] = value;
    } else if (goes_to_pyramid(key)) {
      pyramid[key] = value;
    } else if (key == "mean_value") {
      fail(
          "policy 'pyramidkv+fasa' has no option 'mean_value' (plain fasa's mean-value "
          "correction would need the mean of V over the kept slots)");
    } else if (key == "variant" && value != "c") {
      fail(
          "policy 'pyramidkv+fasa' runs FASA-C only (variant=c): PyramidKV's votes read whole "
          "keys from RAM");
    } else {
      fasa[key] = value;
    }
  }
  fasa["mean_value"] = "off";  // fasa's default (on) would need the mean of V over kept slots
  if (!pyramid.count("budget")) {
    fail(
        "policy 'pyramidkv+fasa' needs keep=K, the slots PyramidKV keeps per layer on average "
        "(e.g. keep=512,budget=128)");
  }
  return std::make_unique<EvictThenSelect>(make_pyramidkv_policy(ctx, pyramid),
                                           make_fasa_policy(ctx, fasa));
}

}  // namespace fasa
