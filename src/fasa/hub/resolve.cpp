#include "fasa/hub/resolve.h"

#include <filesystem>

#include "fasa/core/error.h"
#include "fasa/hub/cache.h"
#include "fasa/hub/pull.h"
#include "fasa/hub/registry.h"

namespace fasa::hub {

std::string resolve_model_path(const std::string& model, bool verify) {
  namespace fs = std::filesystem;
  if (model.empty()) fail("no model given (-m PATH or a name such as smollm2-135m)");
  std::error_code ec;
  if (fs::exists(model, ec)) {
    verify_model_file(model, "", verify, "pull it again, or delete the file");
    return model;
  }
  const Registry reg = Registry::from_env();
  if (const ModelSpec* spec = reg.find(model)) {
    const fs::path p = cached_model_path(*spec, pull_options_from_env().home);
    if (fs::exists(p, ec)) {
      verify_model_file(p, spec->sha256, verify, fmt::format("run `fasa pull {}` again", model));
      return p.string();
    }
    fail("model '{}' is not in the cache ({}); run `fasa pull {}` first", model, p.string(), model);
  }
  fail("cannot open model '{}': no such file, and not a known model name ({})", model,
       reg.known_names());
}

}  // namespace fasa::hub
