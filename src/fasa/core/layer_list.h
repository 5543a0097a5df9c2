// Layer lists in messages and reports: "0-29" for a contiguous run of three or more, else
// "5, 11, 17"; "none" for an empty list.
#pragma once

#include <string>
#include <vector>

namespace fasa {

std::string layer_list_text(const std::vector<int>& layers);

}  // namespace fasa
