#include "fasa/eval/report_names.h"

namespace fasa {

std::string report_file_name(const std::string& path) {
  const size_t end = path.find_last_not_of('/');
  if (end == std::string::npos) return path.empty() ? "-" : path;  // "" or "/" alone
  const size_t slash = path.rfind('/', end);
  return path.substr(slash == std::string::npos ? 0 : slash + 1,
                     end - (slash == std::string::npos ? 0 : slash + 1) + 1);
}

}  // namespace fasa
