#include "cli_common.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/hub/pull.h"
#include "fasa/hub/registry.h"

namespace fasa::cli {

std::string resolve_model_path(const std::string& model) {
  namespace fs = std::filesystem;
  if (model.empty()) fail("no model given (-m PATH or a name such as smollm2-135m)");
  std::error_code ec;
  if (fs::exists(model, ec)) return model;
  const hub::Registry reg = hub::Registry::from_env();
  if (const hub::ModelSpec* spec = reg.find(model)) {
    const auto home = hub::pull_options_from_env().home;
    const fs::path p = hub::cached_model_path(*spec, home);
    if (fs::exists(p, ec)) return p.string();
    fail("model '{}' is not in the cache ({}); run `fasa pull {}` first", model, p.string(),
         model);
  }
  fail("cannot open model '{}': no such file, and not a known model name ({})", model,
       reg.known_names());
}

std::shared_ptr<const Model> load_model(const std::string& model) {
  return Model::load(resolve_model_path(model));
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read '{}': {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("error while reading '{}'", path);
  return ss.str();
}

void apply_threads(int n_threads) {
  if (n_threads < 0) fail("--threads must be >= 0 (got {})", n_threads);
  set_num_threads(n_threads);
}

uint64_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.2f} {}", v, units[u]);
}

}  // namespace fasa::cli
