// A sequence: its KV cache, its attention policy and its activations, over a shared Model.
// One Session per thread; any number of Sessions may run concurrently on the same Model.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/attention.h"
#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/model/forward.h"
#include "fasa/model/model.h"

namespace fasa {

struct SessionOptions {
  int n_ctx = 0;  // cache capacity in tokens; 0 = min(model context, 4096)
  KvType kv_type = KvType::F16;
  int prefill_chunk = 256;      // tokens per batched prefill step
  std::string policy = "full";  // name[:key=value,...] (see attention/policy.h)
  // A policy owned by the caller (e.g. the calibrator's observer), used instead of `policy`;
  // it must outlive the session and is kept across reset().
  AttentionPolicy* external_policy = nullptr;
  // Free the rows an eviction policy evicted for good (Session::free_evicted). Off keeps them in
  // the cache (the attention never reads them; a later prefill then reads every row): only for
  // comparing the two, as the tests do.
  bool free_evicted_rows = true;
};

// The context size a session gets for SessionOptions::n_ctx (0 = min(trained context, 4096));
// throws fasa::Error for a negative size or one beyond the trained context.
int resolve_context(const ModelConfig& c, int n_ctx);

// The policy context of a model (shape, RoPE layout, identity).
PolicyContext policy_context(std::shared_ptr<const Model> model);

// The next prefill chunk's length with `remaining` prompt tokens to go and chunks of `chunk`:
// min(chunk, remaining), except that the prompt's last chunk is never one token alone (a
// one-token step is a decode step: the policy selects), so the chunk before it gives up a
// token. Chunking changes no bit of a dense prefill. Only a one-token prompt, or chunk 1, ends
// in a one-token step. Session::prefill and the server's scheduler cut prompts with it.
int prefill_chunk_size(int remaining, int chunk);

class Session;

// One session's part of Session::forward_many: tokens to append (a prefill chunk or a decode
// token).
struct SessionChunk {
  Session* session = nullptr;
  const int32_t* tokens = nullptr;  // [n_tok]
  int n_tok = 0;                    // 1 .. the session's prefill chunk
};

class Session {
 public:
  Session(const std::shared_ptr<const Model>& model, const SessionOptions& opts);
  // The same, with the model's policy context made once by the caller (policy_context(model)):
  // many sessions then share one memoized model hash instead of hashing the file each.
  Session(std::shared_ptr<const Model> model, const SessionOptions& opts,
          const PolicyContext& policy_ctx);

  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& model_ptr() const { return model_; }
  const SessionOptions& options() const { return opts_; }
  const PolicyContext& policy_ctx() const { return policy_ctx_; }
  int n_ctx() const { return cache_.capacity(); }
  int n_past() const { return cache_.n_used(); }
  const KvCache& cache() const { return cache_; }
  const AttnStats& attn_stats() const { return attn_stats_; }
  // The scratch memory of its steps (ForwardScratch::work: core/workspace.h).
  Workspace::Stats workspace_stats() const { return scratch_.work.stats(); }
  AttentionPolicy& policy() { return *active_policy_; }
  const AttentionPolicy& policy() const { return *active_policy_; }
  // The policy's facets (attention/policy_facets.h), looked up when the session got its policy.
  const PolicyFacets& facets() const { return facets_; }
  // KV bytes held in RAM: the cache's rows (KvCache::ram_bytes: an eviction policy's rows gone
  // for good are freed, see free_evicted) plus the policy's side data (resident_bytes). A file
  // tier's bytes (FASA-M) are not in it.
  uint64_t kv_resident_bytes() const;
  // The peak of kv_resident_bytes() after each decode() since the session started, reset() or
  // reset_kv_resident_peak(); 0 when no decode step ran since.
  uint64_t kv_resident_peak_bytes() const { return kv_resident_peak_; }
  void reset_kv_resident_peak() { kv_resident_peak_ = 0; }

  // Appends tokens (batched, in chunks) and returns the logits after the last one: [n_vocab].
  // The attention is dense (the policy is shown the chunks, never asked to select) unless the
  // prompt is one token or the prefill chunk is 1: then the steps are decode steps.
  // Throws fasa::Error when a token id is out of range or the context would overflow.
  // `progress(done, total)` is called after each chunk (may be null). Each chunk, and each
  // decode step below, starts with an interruption point (core/interrupt.h): a check that
  // throws there leaves the session holding the chunks appended before it.
  const std::vector<float>& prefill(const std::vector<int32_t>& tokens,
                                    const std::function<void(int, int)>& progress = nullptr);
  // Appends one token with a single-token (policy-driven) step: logits [n_vocab].
  const std::vector<float>& decode(int32_t token);
  // Appends tokens and returns logits for every one of them: [n_tok, n_vocab]
  // (chunked; `chunk` tokens per forward, 1 = token-by-token decode steps).
  std::vector<float> eval_all(const std::vector<int32_t>& tokens, int chunk);

  // Appends each chunk to its session in one forward pass (weights read once for all of them:
  // continuous batching); each session's last_logits() become those after its chunk's last
  // token. Results equal, bit for bit, each session's own prefill/decode of the same chunks
  // (decode for n_tok = 1). All sessions share one model; each appears once. Throws fasa::Error
  // (changing nothing) for a token out of range, a chunk over the prefill chunk size or one
  // that overflows its context. `scratch` holds the batch's activations between calls.
  static void forward_many(const std::vector<SessionChunk>& chunks, ForwardScratch& scratch);

  // Appends n tokens of random keys and values instead of a prefill (`fasa bench --depth-fill
  // synthetic`: the cost of a decode or prefill step at depth n does not depend on what the
  // cache holds). The rows take the forward pass's own path: KvCache::store per (layer, kv head,
  // slot), the policy's on_append for the global layers, commit with positions n_past.., in
  // chunks of the prefill chunk size; so FASA builds its packed key slices and a sliding-window
  // ring fills as in a prefill. Keys and values are about N(0, 1) per dim; no logits are made.
  // Throws fasa::Error for n < 1, a context overflow, or a policy that needs the prefill
  // queries (SnapKV, H2O: a synthetic fill has none to show it).
  void fill_synthetic(int n, uint64_t seed);

  void reset();  // empties the cache (and makes a fresh policy)
  // Continues from `src`'s tokens: copies its cache and shows every row to this session's policy,
  // exactly as if it had prefilled them itself (prefill is dense, so the state is identical).
  // Both sessions must share the model, context size and KV type; tiered caches cannot be copied.
  // A policy that learns from the prefill queries (PrefillObserver: SnapKV, H2O) takes its
  // prefill statistics from src's policy (prefill_state_source: the same name, or a
  // PrefillObservers member of that name), which must not have decoded yet (fasa::Error
  // otherwise; can_copy_prefix_from says beforehand whether the names allow it).
  void copy_prefix_from(const Session& src);
  bool can_copy_prefix_from(const Session& src) const;
  // The same for src's first n tokens (the prompt cache, engine/prompt_cache.h), with the
  // prefill statistics a prefill-aware policy needs taken from `state` (a policy that saw
  // exactly src's n tokens of dense prefill and no decode step) instead of src's own policy.
  // With n < src.n_past() the last logits are not src's: append a token before reading them.
  // Throws fasa::Error as copy_prefix_from does, for a prefix the cache cannot copy
  // (KvCache::can_copy_prefix), and for a prefill-aware policy without a fitting `state` or
  // with n < src.n_past() (its statistics are those of all of src's tokens).
  void copy_prefix_from(const Session& src, int n, const AttentionPolicy* state);
  const std::vector<float>& last_logits() const { return logits_; }  // [n_vocab]
  // Restores a saved prefix of n tokens (engine/prompt_file.h) into this fresh session:
  // `write` fills the cache's rows (KvCache::write_rows), then slots [0, n) are committed at
  // positions 0..n-1, the policy sees every row (as copy_prefix_from) and last_logits() become
  // `logits` [n_vocab]. Throws fasa::Error for a session that holds tokens, a tiered cache or
  // a policy that needs the prefill queries (a saved prefix has none to show it).
  void restore_prefix(int n, const std::function<void(KvCache&)>& write,
                      const std::vector<float>& logits);
  // Shows a policy that learns from prefill queries but can do without them (calib=online: a
  // PrefillObserver whose needs_prefill_queries is false) the saved queries `w` of slots < n, as
  // the prefill of a prefix this session took (copy_prefix_from, restore_prefix) would have:
  // a prompt-cache file's (engine/prompt_file.h). Any other policy: nothing.
  void replay_prefill_queries(const QueryWindow& w, int n);

  // Lossless decoding (engine/lossless.h): the policy drafts with decode steps, then they are
  // taken back and the tokens verified with full attention.
  // save_point(): remembers n_past and the policy's state (Rewindable::save_point);
  // rollback(): cuts the cache back to the save point and returns the policy to it, as if the
  // steps since had never run (a tiered cache throws fasa::Error).
  void save_point();
  void rollback();
  // Appends n tokens with dense attention that the policy does not see (a `full` policy of the
  // session's own), writing every token's logits: [n, n_vocab]. 1 <= n <= kMaxVerify: a call
  // of at most that many tokens takes decode's per-token kernels, so each row equals, bit for
  // bit, a dense decode step of its token. Throws fasa::Error as decode does.
  void verify(const int32_t* tokens, int n, float* logits);
  static constexpr int kMaxVerify = 15;
  // Keeps the first n_keep of the tokens the last verify() appended, drops the rest, and shows
  // the kept rows to the policy as decode steps would have (on_append); last_logits() are left
  // unchanged.
  void keep_verified(int n_keep);
  // Slots the save point holds (valid after save_point()).
  int save_point_slots() const { return mark_; }

 private:
  void check_tokens(const int32_t* tokens, int n) const;
  // Refuses (fasa::Error) a cache whose RAM when full (KvCache::ram_bytes_full) exceeds the
  // memory available now (core/memory.h), unless FASA_MEMORY_CHECK=off.
  void check_kv_memory() const;
  void run(const int32_t* tokens, int n, bool all_logits, float* logits);
  // An eviction policy's rows gone for good (EvictingPolicy::kept_slots) are freed from the
  // cache (KvCache::evict): after every decode step in batches, and before a prefill all of
  // them (`now`), so its dense attention reads exactly what is kept. Not once lossless decoding
  // started (its verification reads every row): keep_rows_.
  void free_evicted(bool now);
  // Before appending n tokens (a prefill when n > 1) and after (a decode step when n == 1).
  void before_append(int n) {
    if (n > 1) free_evicted(true);
  }
  void after_append(int n) {
    if (n == 1) free_evicted(false);
  }

  std::shared_ptr<const Model> model_;
  SessionOptions opts_;
  AttnShape shape_;
  PolicyContext policy_ctx_;                  // (the model's hash is computed once, on demand)
  std::unique_ptr<AttentionPolicy> policy_;   // owned, made from opts.policy
  AttentionPolicy* active_policy_ = nullptr;  // policy_ or opts.external_policy
  PolicyFacets facets_;                       // active_policy_'s
  KvCache cache_;                             // laid out as the policy asks (tiering)
  ForwardScratch scratch_;
  AttnStats attn_stats_;
  uint64_t kv_resident_peak_ = 0;
  std::vector<float> logits_;                       // [n_vocab]
  std::vector<int32_t> pos_;                        // [chunk] positions scratch
  std::unique_ptr<AttentionPolicy> verify_policy_;  // `full`, made by the first verify()
  PolicyFacets verify_facets_;                      // verify_policy_'s
  int mark_ = -1;                                   // save_point()'s n_past
  int verified_ = 0;                                // tokens the last verify() appended
  bool keep_rows_ = false;          // lossless decoding: no row is freed (see free_evicted)
  std::vector<int32_t> kept_;       // free_evicted's scratch: one (layer, kv head)'s kept slots
  std::vector<int> global_layers_;  // shape_.global_layers()
};

}  // namespace fasa
