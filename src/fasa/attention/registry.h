// Policy registry: one line per policy (see registry.cpp); each policy lives in policies/ with
// its factory and its option table (policies/option_table.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/policies/option_table.h"
#include "fasa/attention/policy.h"

namespace fasa {

using PolicyFactory =
    std::function<std::unique_ptr<AttentionPolicy>(const PolicyContext&, const PolicyOptions&)>;

struct PolicyEntry {
  const char* name;
  const char* summary;
  PolicyFactory make;
  const OptionTable& (*options)();  // its keys; a policy with calib= takes a calibration file
};

// Every policy, in the order help lists them.
const std::vector<PolicyEntry>& policy_entries();
// The option table of a known policy (throws fasa::Error for an unknown name).
const OptionTable& policy_option_table(const std::string& name);
// Every policy with its summary and options, one option a line ("name: summary", then
// "  key=VALUE (default): help"), for the CLI's --policy help. No final newline.
std::string policy_help();

// Factories and option tables, defined in policies/*.cpp.
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
const OptionTable& full_options();
const OptionTable& oracle_options();
const OptionTable& fasa_options();
const OptionTable& streaming_options();
const OptionTable& quest_options();
const OptionTable& sparq_options();
const OptionTable& double_sparsity_options();
const OptionTable& snapkv_options();
const OptionTable& pyramidkv_options();
const OptionTable& h2o_options();
const OptionTable& pyramidkv_fasa_options();

}  // namespace fasa
