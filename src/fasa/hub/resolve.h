// A model argument as every front end takes it (the CLI's -m, the Python package's Model): a
// GGUF path, or the name of a known model already pulled into the cache.
#pragma once

#include <string>

namespace fasa::hub {

// The GGUF path `model` stands for. Throws fasa::Error saying what was tried (and, for a known
// model not yet in the cache, to run `fasa pull NAME`). A pulled model (a name, or a path with
// the .sha256 marker `fasa pull` writes beside it) is checked against its recorded sha256
// (hub/cache.h verify_model_file: cheap while its size and mtime are unchanged; `verify` hashes
// it whatever they are), so a damaged file is an error, not garbage.
std::string resolve_model_path(const std::string& model, bool verify = false);

}  // namespace fasa::hub
