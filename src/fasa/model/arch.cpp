#include "fasa/model/arch.h"

#include <cmath>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/model/config.h"

namespace fasa {

namespace {

// Gemma 3's attention scale and logit soft-capping. The values the metadata does not carry
// follow llama.cpp (the reference the goldens come from): the attention scale of gemma_pytorch's
// config for each size (27B, 62 layers: 1/sqrt(d/heads)).
void read_gemma3(const GgufFile& f, const std::string& a, ModelConfig& c) {
  if (f.find(a + "attention.scale") != nullptr) {
    c.attn_scale = static_cast<float>(f.get_float(a + "attention.scale"));
    if (!(c.attn_scale > 0.0f && c.attn_scale <= 1.0f)) {
      fail("{}: '{}attention.scale' = {} must be in (0, 1]", f.path(), a, c.attn_scale);
    }
  } else if (c.n_layers == 62) {
    const int query_scalar = c.d_model / c.n_heads;  // an integer in the reference (5376 / 32)
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(query_scalar));
  }
  c.final_logit_softcap = static_cast<float>(f.get_float_or(a + "final_logit_softcapping", 0.0));
  if (!(c.final_logit_softcap >= 0.0f && c.final_logit_softcap <= 1e6f)) {
    fail("{}: '{}final_logit_softcapping' = {} must be in [0, 1e6]", f.path(), a,
         c.final_logit_softcap);
  }
}

// One row per architecture, in Arch's order.
std::vector<ArchInfo> make_table() {
  // clang-format off
  return {
    // The converter permuted llama's Q/K rows into interleaved pairs (NORM RoPE).
    {.arch = Arch::Llama, .name = "llama", .rope_layout = RopeLayout::Norm,
     .qkv_bias = false, .qk_norm = false, .fused_gate_up = false, .post_norms = false,
     .embd_scale_sqrt_d = false, .ffn_act = FfnAct::Silu,
     .sliding_window = false, .window_period = 0,
     .extra_keys = {}, .read_extra = nullptr, .family = "llama (other)"},
    // llama's block plus Q/K/V biases; halves-paired (NEOX) RoPE.
    {.arch = Arch::Qwen2, .name = "qwen2", .rope_layout = RopeLayout::Neox,
     .qkv_bias = true, .qk_norm = false, .fused_gate_up = false, .post_norms = false,
     .embd_scale_sqrt_d = false, .ffn_act = FfnAct::Silu,
     .sliding_window = false, .window_period = 0,
     .extra_keys = {}, .read_extra = nullptr, .family = "Qwen 2 / 2.5"},
    // llama's block plus per-head Q/K RMSNorm, no biases; NEOX RoPE.
    {.arch = Arch::Qwen3, .name = "qwen3", .rope_layout = RopeLayout::Neox,
     .qkv_bias = false, .qk_norm = true, .fused_gate_up = false, .post_norms = false,
     .embd_scale_sqrt_d = false, .ffn_act = FfnAct::Silu,
     .sliding_window = false, .window_period = 0,
     .extra_keys = {}, .read_extra = nullptr, .family = "Qwen 3"},
    // llama's block with fused QKV and fused gate/up matrices; NEOX RoPE. llama.cpp turns
    // Phi-3's sliding window off for every Phi-3 file (its PR 13676: the converters do not write
    // the layer pattern correctly); the goldens come from it, so does this engine.
    {.arch = Arch::Phi3, .name = "phi3", .rope_layout = RopeLayout::Neox,
     .qkv_bias = false, .qk_norm = false, .fused_gate_up = true, .post_norms = false,
     .embd_scale_sqrt_d = false, .ffn_act = FfnAct::Silu,
     .sliding_window = false, .window_period = 0,
     .extra_keys = {
         {"attention.sliding_window", "ignored for phi3, as llama.cpp does"},
     },
     .read_extra = nullptr, .family = "Phi-3"},
    // Gemma blocks (QK-norm, post-norms, GELU-tanh, scaled embeddings), sliding-window and
    // global layers: one global layer in every 6 unless the file says otherwise; NEOX RoPE.
    {.arch = Arch::Gemma3, .name = "gemma3", .rope_layout = RopeLayout::Neox,
     .qkv_bias = false, .qk_norm = true, .fused_gate_up = false, .post_norms = true,
     .embd_scale_sqrt_d = true, .ffn_act = FfnAct::GeluTanh,
     .sliding_window = true, .window_period = 6,
     .extra_keys = {
         {"attention.sliding_window", "window of the sliding-window layers"},
         {"attention.sliding_window_pattern", "which layers slide"},
         {"rope.freq_base_swa", "RoPE base of the sliding-window layers"},
         {"final_logit_softcapping", "logit soft-capping"},
         {"attention.scale", "softmax scale of q.k"},
     },
     .read_extra = read_gemma3, .family = "Gemma 3"},
  };
  // clang-format on
}

}  // namespace

const char* ffn_act_name(FfnAct a) { return a == FfnAct::Silu ? "silu" : "gelu_tanh"; }

const std::vector<ArchInfo>& arch_table() {
  static const std::vector<ArchInfo> table = make_table();
  return table;
}

std::optional<Arch> parse_arch(std::string_view name) {
  for (const ArchInfo& row : arch_table()) {
    if (name == row.name) return row.arch;
  }
  return std::nullopt;
}

const ArchInfo& arch_info(Arch arch) {
  const ArchInfo& row = arch_table().at(static_cast<size_t>(arch));
  FASA_CHECK(row.arch == arch);  // the rows are in Arch's order
  return row;
}

const char* arch_name(Arch arch) { return arch_info(arch).name; }

std::string arch_names() {
  std::string list;
  for (const ArchInfo& row : arch_table())
    list += (list.empty() ? "" : ", ") + std::string(row.name);
  return list;
}

}  // namespace fasa
