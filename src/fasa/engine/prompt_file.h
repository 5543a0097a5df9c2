// A prefilled prompt on disk (`fasa run --prompt-cache FILE`): the prompt's tokens, the KV rows
// its dense prefill wrote and the logits after its last token, bound to the model file's sha256
// and checked by a sha256 over the whole file; with an online-calibrated policy (calib=online)
// also the prompt queries it keeps to calibrate from, so that a run that reuses the prefix
// calibrates from the prompt as an uncached run does. Little-endian, version 2:
//
//   "FASAPRC1"                                   magic (8 bytes)
//   u32 version (2), kv_type, n_layers, n_kv_heads, head_dim, n_vocab, n_tokens
//   char[64] model sha256 (lowercase hex)
//   u32 rows[n_layers]       rows saved per layer: n_tokens, or a sliding-window layer's
//   u32 ring[n_layers]       ring size (0 for a global layer)
//   i32 tokens[n_tokens]
//   per layer, per kv head: K rows[rows[l]], then V rows[rows[l]] (row_bytes each, the
//                            cache's own encoding: f16, f32 or q8_0 blocks)
//   f32 logits[n_vocab]
//   u32 n_query_layers       0 (no queries), or the global layers (shape.global_layers())
//   u32 n_heads              only when n_query_layers > 0, and then per global layer:
//     u32 held, i32 slots[held] (ascending, < n_tokens), f32 q[held, n_heads, head_dim]
//   char[64] sha256 of every byte before it (lowercase hex)
//
// Version 1 (no queries) is read too. Loading refuses, with one fasa::Error naming the file,
// anything that is not such a file, a damaged or cut-short one, another version, another model,
// another KV type, or ring sizes that differ where the rings wrapped.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/online_calibration.h"
#include "fasa/engine/session.h"

namespace fasa {

// Writes s's n_past() tokens (`tokens`: their ids) atomically to `path`, with the prompt
// queries s's policy keeps (OnlineCalibrationInfo::prompt_queries) if any. s must hold exactly
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
// when the saved tokens do not fit s's context. `queries`, if not null, receives the saved
// prompt queries (null when the file has none): Session::replay_prefill_queries shows them to
// the session that takes the prefix.
std::vector<int32_t> load_prompt_file(const std::string& path, Session& s,
                                      std::unique_ptr<QueryWindow>* queries = nullptr);

}  // namespace fasa
