// Helpers shared by the fuzz targets (fuzz/*_fuzz.cpp): the readers under test take a path, so
// each input is written to one scratch file per process first.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace fasa::fuzz {

// A scratch file of this process (in /dev/shm when there is one: no disk writes per input).
inline const std::string& scratch_path() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : (tmp ? tmp : "/tmp");
    return dir + "/fasa_fuzz_" + std::to_string(getpid());
  }();
  return path;
}

// Writes `data` to the scratch file (removed at exit) and returns its path.
inline const std::string& write_scratch(const uint8_t* data, size_t size) {
  const std::string& path = scratch_path();
  static const bool registered = [] {
    std::atexit([] { std::remove(scratch_path().c_str()); });
    return true;
  }();
  (void)registered;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  if (std::fclose(f) != 0) std::abort();
  return path;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A broken property of the code under test: print and abort (libFuzzer saves the input).
[[noreturn]] inline void property_failed(const char* what) {
  std::fprintf(stderr, "fuzz: property failed: %s\n", what);
  std::abort();
}

}  // namespace fasa::fuzz

#define FASA_FUZZ_EXPECT(cond)                                       \
  do {                                                               \
    if (!(cond)) ::fasa::fuzz::property_failed(#cond);               \
  } while (0)
