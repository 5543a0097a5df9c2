#include "fasa/model/metadata_keys.h"

#include <algorithm>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"

namespace fasa {

std::vector<KnownKey> known_metadata_keys(const ArchInfo& arch) {
  std::vector<KnownKey> keys = {
      {"context_length", "trained context; default run context and the bench's limit"},
      {"embedding_length", "d_model"},
      {"block_count", "n_layers"},
      {"feed_forward_length", "d_ff"},
      {"attention.head_count", "n_heads"},
      {"attention.head_count_kv", "n_kv_heads"},
      {"attention.key_length", "head_dim"},
      {"attention.value_length", "must equal key_length"},
      {"attention.layer_norm_rms_epsilon", "RMSNorm epsilon"},
      {"rope.dimension_count", "rotated dims per head"},
      {"rope.freq_base", "RoPE base"},
      {"rope.scaling.type", "RoPE scaling: none, linear, yarn, longrope (model/rope.h)"},
      {"rope.scaling.factor", "RoPE scaling factor"},
      {"rope.scale_linear", "older name of the linear factor"},
      {"rope.scaling.original_context_length", "YaRN ramp and LongRoPE long/short switch"},
      {"rope.scaling.attn_factor", "magnitude on the rotated dims of q and k"},
      {"rope.scaling.finetuned", "informational (llama.cpp does not use it in the math)"},
      {"rope.scaling.yarn_ext_factor", "accepted only at 1"},
      {"rope.scaling.yarn_attn_factor", "accepted only at 1"},
      {"rope.scaling.yarn_beta_fast", "accepted only at 32"},
      {"rope.scaling.yarn_beta_slow", "accepted only at 1"},
      {"rope.scaling.yarn_log_multiplier", "accepted only at 0"},
      {"vocab_size", "n_vocab (else the embedding's rows)"},
      {"expert_count", "accepted only at 0 (no mixture of experts)"},
      {"expert_used_count", "accepted only at 0"},
      {"attention.causal", "accepted only at true"},
  };
  keys.insert(keys.end(), arch.extra_keys.begin(), arch.extra_keys.end());
  return keys;
}

void check_metadata_keys(const GgufFile& f, const ArchInfo& arch) {
  const std::vector<KnownKey> known = known_metadata_keys(arch);
  const std::string prefix = std::string(arch.name) + ".";
  std::vector<std::string> unknown;
  for (const GgufKV& kv : f.metadata()) {
    if (kv.key.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string suffix = kv.key.substr(prefix.size());
    const bool ok = std::any_of(known.begin(), known.end(),
                                [&](const KnownKey& k) { return suffix == k.suffix; });
    if (!ok) unknown.push_back(kv.key);
  }
  if (!unknown.empty()) {
    std::string list;
    for (const std::string& k : unknown) list += (list.empty() ? "'" : ", '") + k + "'";
    fail(
        "{}: metadata {} not understood by this engine and may change the math; refusing the "
        "file (see docs/MODELS.md, strict loading)",
        f.path(), list);
  }
  if (f.get_int_or(prefix + "expert_count", 0) != 0 ||
      f.get_int_or(prefix + "expert_used_count", 0) != 0) {
    fail("{}: '{}expert_count' > 0: mixture-of-experts models are not supported", f.path(), prefix);
  }
  if (!f.get_bool_or(prefix + "attention.causal", true)) {
    fail("{}: '{}attention.causal' = false: non-causal models are not supported", f.path(), prefix);
  }
  if (f.get_int_or("split.count", 1) != 1) {
    fail(
        "{}: the model is split across {} files ('split.count'); merge it first with "
        "llama.cpp's llama-gguf-split --merge",
        f.path(), f.get_int_or("split.count", 1));
  }
}

}  // namespace fasa
