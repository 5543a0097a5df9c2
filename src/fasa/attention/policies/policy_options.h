// Option parsing shared by the policies in this folder (each policy still owns its option list
// and its "no option 'x'" message).
#pragma once

#include <set>
#include <string>

#include "fasa/attention/kv_cache.h"

namespace fasa {

// A whole number in [0, 2^24]; throws fasa::Error "policy 'P': KEY must be a non-negative whole
// number (got 'V')" otherwise.
int parse_policy_count(const std::string& policy, const std::string& key, const std::string& v);

// `dense_layers=L1+L2|none`: the layers a policy leaves dense. Each must exist and be a global
// layer of `shape` (a sliding-window layer attends over its window, outside any policy: naming
// one is an error that lists the global layers).
std::set<int> parse_dense_layers(const std::string& policy, const std::string& value,
                                 const AttnShape& shape);

// A policy's default dense layers are layer numbers; on a hybrid stack the sliding-window ones
// among them are no concern of the policy's and are dropped.
void drop_sliding_window_layers(std::set<int>& layers, const AttnShape& shape);

}  // namespace fasa
