// Policy registry: one line per policy (see registry.cpp); each policy lives in policies/.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "fasa/attention/policy.h"

namespace fasa {

using PolicyFactory =
    std::function<std::unique_ptr<AttentionPolicy>(const PolicyContext&, const PolicyOptions&)>;

struct PolicyEntry {
  const char* name;
  const char* summary;
  PolicyFactory make;
  bool calibrated = false;  // takes calib= (a `fasa calibrate` file)
};

// Factories, defined in policies/*.cpp.
std::unique_ptr<AttentionPolicy> make_full_policy(const PolicyContext&, const PolicyOptions&);
std::unique_ptr<AttentionPolicy> make_oracle_policy(const PolicyContext&, const PolicyOptions&);
std::unique_ptr<AttentionPolicy> make_fasa_policy(const PolicyContext&, const PolicyOptions&);
std::unique_ptr<AttentionPolicy> make_streaming_policy(const PolicyContext&, const PolicyOptions&);
std::unique_ptr<AttentionPolicy> make_quest_policy(const PolicyContext&, const PolicyOptions&);
std::unique_ptr<AttentionPolicy> make_sparq_policy(const PolicyContext&, const PolicyOptions&);
std::unique_ptr<AttentionPolicy> make_double_sparsity_policy(const PolicyContext&,
                                                             const PolicyOptions&);
std::unique_ptr<AttentionPolicy> make_snapkv_policy(const PolicyContext&, const PolicyOptions&);
std::unique_ptr<AttentionPolicy> make_pyramidkv_policy(const PolicyContext&, const PolicyOptions&);
std::unique_ptr<AttentionPolicy> make_h2o_policy(const PolicyContext&, const PolicyOptions&);
std::unique_ptr<AttentionPolicy> make_pyramidkv_fasa_policy(const PolicyContext&,
                                                            const PolicyOptions&);

}  // namespace fasa
