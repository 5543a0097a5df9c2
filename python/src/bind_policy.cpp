// Attention policies: their names and summaries, and checking a spec ("name:key=value,...").
#include <algorithm>

#include <pybind11/stl.h>

#include "bindings.h"
#include "fasa/attention/policies/option_table.h"
#include "fasa/attention/registry.h"

namespace fasa::py {

namespace {

// Checks a spec and returns (name, options). With a model, the policy is made for it (every
// option checked, a calibration file read); without one, the name, the keys and the forms of
// the values are (layer numbers against a stand-in shape of many global layers).
pb::tuple check_spec(const std::string& spec, const std::shared_ptr<PyModel>& model) {
  std::string name;
  PolicyOptions opts;
  {
    pb::gil_scoped_release nogil;
    parse_policy_spec(spec, &name, &opts);
    const std::vector<std::string> names = policy_names();
    if (model || std::find(names.begin(), names.end(), name) == names.end()) {
      // (an unknown name fails before the context is read: the message lists the known ones)
      make_policy(name, model ? model->policy_ctx : PolicyContext{}, opts);
    } else {
      AttnShape any;
      any.n_layers = 4096;
      any.n_heads = any.n_kv_heads = 1;
      any.head_dim = 128;
      ParsedOptions(policy_option_table(name), opts, any);
    }
  }
  return pb::make_tuple(name, opts);
}

}  // namespace

void bind_policy(pb::module_& m) {
  m.def("policy_names", &policy_names);
  m.def("policy_summaries", [] {
    std::vector<std::pair<std::string, std::string>> v;
    for (const PolicyEntry& e : policy_entries()) v.emplace_back(e.name, e.summary);
    return v;
  });
  m.def("policy_help", &policy_help);
  m.def("check_policy", &check_spec, pb::arg("spec"), pb::arg("model") = nullptr);
}

}  // namespace fasa::py
