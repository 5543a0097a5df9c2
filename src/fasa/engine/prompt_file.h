// A prefilled prompt on disk (`fasa run --prompt-cache FILE`): the prompt's tokens, the KV rows
// its dense prefill wrote and the logits after its last token, bound to the model file's sha256
// and checked by a sha256 over the whole file. Little-endian, version 1:
//
//   "FASAPRC1"                                   magic (8 bytes)
//   u32 version (1), kv_type, n_layers, n_kv_heads, head_dim, n_vocab, n_tokens
//   char[64] model sha256 (lowercase hex)
//   u32 rows[n_layers]       rows saved per layer: n_tokens, or a sliding-window layer's
//   u32 ring[n_layers]       ring size (0 for a global layer)
//   i32 tokens[n_tokens]
//   per layer, per kv head: K rows[rows[l]], then V rows[rows[l]] (row_bytes each, the
//                            cache's own encoding: f16, f32 or q8_0 blocks)
//   f32 logits[n_vocab]
//   char[64] sha256 of every byte before it (lowercase hex)
//
// Loading refuses, with one fasa::Error naming the file, anything that is not such a file, a
// damaged or cut-short one, another version, another model, another KV type, or ring sizes that
// differ where the rings wrapped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fasa/engine/session.h"

namespace fasa {

// Writes s's n_past() tokens (`tokens`: their ids) atomically to `path`. s must hold exactly
// them, with nothing evicted and no tiered cache (fasa::Error otherwise).
void save_prompt_file(const std::string& path, const Session& s,
                      const std::vector<int32_t>& tokens);

struct PromptFileInfo {
  int n_tokens = 0;
  std::string model_sha256;
  uint32_t kv_type = 0;  // the KvType it holds
};
// Reads only the header of `path` (validated as load_prompt_file does, without the checksum).
PromptFileInfo peek_prompt_file(const std::string& path);
// Throws fasa::Error naming `path` when the file was made with another model or holds another
// KV type than `s` (load_prompt_file's first checks, so a file that will not be used is never
// overwritten by one of another model).
void check_prompt_file_for(const PromptFileInfo& info, const std::string& path, const Session& s);

// Restores `path` into `s`, a fresh session of the same model (Session::restore_prefix), and
// returns the saved tokens. Throws fasa::Error naming the file for any problem listed above, or
// when the saved tokens do not fit s's context.
std::vector<int32_t> load_prompt_file(const std::string& path, Session& s);

}  // namespace fasa
