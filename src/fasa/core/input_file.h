// Files a user names for the engine to read (models, calibrations, task files, texts, prompt
// caches, key files): regular files only. A FIFO, a device, a socket or a directory is refused
// by name at once; the open is non-blocking, so a FIFO nobody writes to cannot hang a run.
#pragma once

#include <string>
#include <string_view>

namespace fasa {

// Opens `path` for reading (O_CLOEXEC; reads block as usual) and returns the descriptor, which
// the caller closes. Throws fasa::Error "cannot read WHAT 'PATH': REASON", e.g. "is a FIFO,
// not a regular file" or the system's reason.
int open_input_file(const std::string& path, std::string_view what);

// The whole file (open_input_file's checks and errors).
std::string read_input_file(const std::string& path, std::string_view what);

}  // namespace fasa
