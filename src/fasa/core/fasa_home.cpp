#include "fasa/core/fasa_home.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "fasa/core/error.h"

namespace fasa {

std::filesystem::path fasa_home() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("FASA_HOME"); env != nullptr && env[0] != '\0') {
    return fs::absolute(env).lexically_normal();
  }
  const char* home = std::getenv("HOME");
  if (home == nullptr || home[0] == '\0') {
    const passwd* pw = getpwuid(getuid());
    if (pw == nullptr || pw->pw_dir == nullptr)
      fail("cannot find the home directory; set FASA_HOME");
    home = pw->pw_dir;
  }
  return (fs::absolute(home) / ".cache" / "fasa").lexically_normal();
}

}  // namespace fasa
