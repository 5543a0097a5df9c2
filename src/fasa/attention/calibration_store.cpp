#include "fasa/attention/calibration_store.h"

#include <sys/stat.h>

#include <algorithm>

#include "fasa/attention/calibration.h"
#include "fasa/core/error.h"
#include "fasa/core/fasa_home.h"

namespace fasa {

namespace fs = std::filesystem;

namespace {

int64_t mtime_of(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_mtim.tv_sec) : 0;
}

// The regular *.json files of `dir`, newest first (ties: by name).
std::vector<fs::path> json_files_newest_first(const fs::path& dir) {
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".json" || !e.is_regular_file(ec)) continue;
    found.emplace_back(mtime_of(e.path()), e.path());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<fs::path> out;
  for (auto& [t, p] : found) out.push_back(std::move(p));
  return out;
}

}  // namespace

fs::path calibration_store_dir() { return fasa_home() / "calibrations"; }

fs::path stored_calibration_path(const std::string& model_sha256, const std::string& text_name) {
  std::string name = fs::path(text_name).stem().string();
  for (char& c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (!keep) c = '_';
  }
  if (name.empty() || name[0] == '.') name = "text" + name;
  return calibration_store_dir() / model_sha256 / (name + ".json");
}

std::string find_stored_calibration(const std::string& model_sha256) {
  const std::vector<fs::path> files =
      json_files_newest_first(calibration_store_dir() / model_sha256);
  return files.empty() ? std::string() : files.front().string();
}

bool is_stored_calibration(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  const fs::path store = fs::weakly_canonical(calibration_store_dir(), ec);
  const auto [s, q] = std::mismatch(store.begin(), store.end(), p.begin(), p.end());
  return s == store.end() && q != p.end();
}

std::string resolve_calibration(const std::string& value, const PolicyContext& ctx,
                                const std::string& policy) {
  if (value == "online") return value;
  if (value != "auto") {
    if (value.empty()) fail("policy '{}': calib= needs a file, auto or online", policy);
    return value;
  }
  if (!ctx.model_sha256) return "online";
  const std::string found = find_stored_calibration(ctx.model_sha256());
  return found.empty() ? "online" : found;
}

std::string with_stored_calibration(const std::string& spec, const PolicyContext& ctx) {
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  if (!policy_takes_calibration(name)) return spec;
  const auto it = opts.find("calib");
  if (it != opts.end() && it->second != "auto") return spec;
  opts["calib"] = resolve_calibration("auto", ctx, name);
  return policy_spec(name, opts);
}

std::string calibration_kind(const std::string& spec) {
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  const auto it = opts.find("calib");
  if (it == opts.end() || it->second.empty() || it->second == "auto") return {};
  if (it->second == "online") return it->second;
  return is_stored_calibration(it->second) ? "stored" : "file";
}

std::vector<StoredCalibration> list_stored_calibrations() {
  std::vector<StoredCalibration> out;
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(calibration_store_dir(), ec)) {
    if (e.is_directory(ec)) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& d : dirs) {
    for (const fs::path& f : json_files_newest_first(d)) {
      StoredCalibration s;
      s.path = f.string();
      s.model_sha256 = d.filename().string();
      s.mtime_s = mtime_of(f);
      try {
        const Calibration c = load_calibration(s.path);
        s.model_name = c.model_name;
        s.text_name = c.text_name;
        s.text_sha256 = c.text_sha256;
        s.version = c.has_compound() ? kCalibrationVersion : c.has_channel_importance() ? 3 : 2;
        s.k = c.k;
        s.samples = c.n_samples;
        s.tokens = c.tokens_per_sample;
        s.steps = c.steps;
        s.n_compound = c.n_compound;
        if (c.model_sha256 != s.model_sha256) s.error = "made for another model than its folder";
      } catch (const Error& e) {
        s.error = e.what();
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace fasa
