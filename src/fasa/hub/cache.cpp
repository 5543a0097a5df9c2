#include "fasa/hub/cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "fasa/core/error.h"
#include "fasa/core/fasa_home.h"
#include "fasa/core/sha256.h"
#include "fasa/io/atomic_file.h"

namespace fs = std::filesystem;

namespace fasa::hub {
namespace {

constexpr std::string_view kTempTag = ".fasa-tmp-";

// Modification time in nanoseconds since the Unix epoch; -1 if the file cannot be stat'ed.
long long mtime_ns(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return -1;
  return static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

void fsync_path(const fs::path& p, bool directory) {
  const int fd = ::open(p.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) return;  // best effort: durability, not correctness
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

fs::path default_home() { return fasa_home(); }

fs::path marker_path(const fs::path& file) {
  fs::path m = file;
  m += ".sha256";
  return m;
}

bool marker_matches(const fs::path& file, std::string_view sha256) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return false;
  std::ifstream in(marker_path(file));
  if (!in) return false;
  std::string key_hash, key_size, key_mtime, hash;
  unsigned long long size = 0;
  long long mtime = 0;
  if (!(in >> key_hash >> hash >> key_size >> size >> key_mtime >> mtime)) return false;
  if (key_hash != "sha256" || key_size != "size" || key_mtime != "mtime_ns") return false;
  const auto actual_size = fs::file_size(file, ec);
  if (ec) return false;
  return hash == sha256 && size == actual_size && mtime == mtime_ns(file);
}

std::string marker_sha256(const fs::path& file) {
  std::ifstream in(marker_path(file));
  std::string key, hash;
  if (!in || !(in >> key >> hash) || key != "sha256" || !is_sha256_hex(hash)) return {};
  return hash;
}

bool verify_model_file(const fs::path& file, std::string expected, bool full,
                       std::string_view fix) {
  if (expected.empty()) expected = marker_sha256(file);
  if (expected.empty()) {
    if (full) {
      fail(
          "cannot verify '{}': no {} beside it records its sha256 (only pulled models have "
          "one)",
          file.string(), marker_path(file).filename().string());
    }
    return false;
  }
  if (!full && marker_matches(file, expected)) return true;
  std::fprintf(stderr, "fasa: verifying the sha256 of %s\n", file.c_str());
  const std::string actual = sha256_file_hex(file);
  if (actual != expected) {
    fail(
        "model file '{}' is damaged: its sha256 is {}, but {} was recorded when it was pulled; "
        "{}",
        file.string(), actual, expected, fix);
  }
  try {
    write_marker(file, expected);
  } catch (const Error&) {  // a read-only cache: checked again next time
  }
  return true;
}

void write_marker(const fs::path& file, std::string_view sha256) {
  std::ostringstream text;
  text << "sha256 " << sha256 << "\nsize " << fs::file_size(file) << "\nmtime_ns " << mtime_ns(file)
       << "\n";
  write_file_atomic(marker_path(file).string(), text.str());
}

void remove_cached(const fs::path& file) {
  std::error_code ec;
  fs::remove(marker_path(file), ec);
  fs::remove(file, ec);
}

void commit_file(const fs::path& tmp, const fs::path& dest) {
  fsync_path(tmp, false);
  std::error_code ec;
  fs::rename(tmp, dest, ec);
  if (ec) fail("cannot move '{}' to '{}': {}", tmp.string(), dest.string(), ec.message());
  fsync_path(dest.parent_path(), true);
}

void remove_stale_temps(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.find(kTempTag);
    if (name.empty() || name[0] != '.' || at == std::string::npos) continue;
    const long pid = std::strtol(name.c_str() + at + kTempTag.size(), nullptr, 10);
    if (pid <= 0) continue;
    // kill(pid, 0) fails with ESRCH only when no such process exists.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code rm_ec;
    fs::remove_all(entry.path(), rm_ec);
  }
}

TempPath::TempPath(const fs::path& dir, std::string_view stem) {
  static std::atomic<unsigned> counter{0};
  path_ = dir / fmt::format(".{}{}{}-{}", stem, kTempTag, static_cast<long>(::getpid()),
                            counter.fetch_add(1));
}

TempPath::~TempPath() {
  if (released_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace fasa::hub
