// `full`: dense attention over every cached token (the reference every policy is measured by).
#include "fasa/attention/registry.h"

namespace fasa {

namespace {

class FullPolicy final : public AttentionPolicy {
 public:
  std::string_view name() const override { return "full"; }
  void select(const AttnQuery&, Selection& out) override { out.set_all(); }
  // Nothing to compute, so no parallel region for it (one fewer per layer and decode token).
  void select_layer(const AttnQuery*, int n, Selection* outs) override {
    for (int g = 0; g < n; ++g) outs[g].set_all();
  }
};

}  // namespace

const OptionTable& full_options() {
  static const OptionTable t{"full", {}};
  return t;
}

std::unique_ptr<AttentionPolicy> make_full_policy(const PolicyContext& ctx,
                                                  const PolicyOptions& opts) {
  const ParsedOptions checked(full_options(), opts, ctx.shape);  // throws on any option given
  return std::make_unique<FullPolicy>();
}

}  // namespace fasa
