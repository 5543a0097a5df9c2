// The architectures the forward pass implements, one row each: GGUF's general.architecture
// string is parsed once into an Arch, and everything the loader and the forward pass do
// differently for an architecture (RoPE layout, block shape, sliding windows, extra metadata keys,
// the family name) is read from its row, never from the string.
//
// Adding an architecture: a value of Arch, a row in arch.cpp's table, and the forward pass's
// support for any block feature the row turns on that no other row has yet.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fasa/kernels/ops.h"

namespace fasa {

class GgufFile;
struct ModelConfig;

enum class Arch { Llama, Qwen2, Qwen3, Phi3, Gemma3 };

enum class FfnAct { Silu, GeluTanh };  // gated feed-forward: act(gate) * up
const char* ffn_act_name(FfnAct a);    // "silu" | "gelu_tanh"

// A metadata key of an architecture's files beyond the ones every architecture shares.
struct KnownKey {
  const char* suffix;  // after "{arch}."
  const char* role;    // what the engine does with it (shown by `fasa inspect --keys`)
};

struct ArchInfo {
  Arch arch;
  const char* name;  // general.architecture, also the metadata keys' prefix "{name}."
  RopeLayout rope_layout;
  bool qkv_bias;           // Q, K and V projections add a bias
  bool qk_norm;            // RMSNorm of every Q and K head ([head_dim] weights) before RoPE
  bool fused_gate_up;      // ffn_up holds the gate rows then the up rows
  bool post_norms;         // RMSNorm of the attention and FFN outputs before the residual add
  bool embd_scale_sqrt_d;  // token embeddings are multiplied by sqrt(d_model)
  FfnAct ffn_act;
  bool sliding_window;  // sliding-window and global layers ({name}.attention.sliding_window)
  int window_period;    // without a pattern key, layer l slides unless l % p == p - 1
  std::vector<KnownKey> extra_keys;  // metadata keys only this architecture's files carry
  // Reads the metadata only this architecture has (attention scale, logit soft-capping) into a
  // config whose shared fields are read; nullptr when there is none.
  void (*read_extra)(const GgufFile& f, const std::string& prefix, ModelConfig& c);
  const char* family;  // model_family() when the tokenizer metadata does not tell more
};

// Every row, in Arch's order (the order error messages list them in).
const std::vector<ArchInfo>& arch_table();

// The row of `name` (general.architecture), or nullopt for an architecture not implemented.
std::optional<Arch> parse_arch(std::string_view name);
const ArchInfo& arch_info(Arch arch);
const char* arch_name(Arch arch);

// "llama, qwen2, ..." (the table's names, for error messages).
std::string arch_names();

}  // namespace fasa
