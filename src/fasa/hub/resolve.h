// A model argument as every front end takes it (the CLI's -m, the Python package's Model): a
// GGUF path, or the name of a known model already pulled into the cache.
#pragma once

#include <string>

namespace fasa::hub {

// The GGUF path `model` stands for. Throws fasa::Error saying what was tried (and, for a known
// model not yet in the cache, to run `fasa pull NAME`).
std::string resolve_model_path(const std::string& model);

}  // namespace fasa::hub
