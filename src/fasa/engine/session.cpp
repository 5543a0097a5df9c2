#include "fasa/engine/session.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "fasa/attention/online_calibration.h"
#include "fasa/attention/prefill_observers.h"
#include "fasa/core/error.h"
#include "fasa/core/interrupt.h"
#include "fasa/core/memory.h"
#include "fasa/core/sha256.h"
#include "fasa/io/gguf.h"

namespace fasa {

int resolve_context(const ModelConfig& c, int n_ctx) {
  if (n_ctx < 0) fail("context size must be positive (got {})", n_ctx);
  if (n_ctx == 0) return std::min(c.n_ctx_train, 4096);
  if (n_ctx > c.n_ctx_max()) {
    fail("context size {} exceeds the model's {} context length {}", n_ctx,
         c.n_ctx_max() > c.n_ctx_train ? "YaRN-scaled" : "trained", c.n_ctx_max());
  }
  return n_ctx;
}

int prefill_chunk_size(int remaining, int chunk) {
  const int m = std::min(chunk, remaining);
  return remaining - m == 1 && m > 1 ? m - 1 : m;
}

namespace {

AttnShape shape_of(const ModelConfig& c) {
  return AttnShape{c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.layer_window};
}

}  // namespace

PolicyContext policy_context(std::shared_ptr<const Model> model) {
  const ModelConfig& c = model->config();
  PolicyContext ctx;
  ctx.shape = shape_of(c);
  ctx.arch = c.arch;
  ctx.rope_layout = c.rope_layout;
  ctx.rope_dim = c.rope_dim;
  // Hashing the file takes a while: the model hashes it once for every context and policy.
  ctx.model_sha256 = [model] { return model->sha256(); };
  return ctx;
}

namespace {

std::unique_ptr<AttentionPolicy> policy_from_spec(const std::string& spec,
                                                  const PolicyContext& ctx) {
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  return make_policy(name, ctx, opts);
}

}  // namespace

Session::Session(const std::shared_ptr<const Model>& model, const SessionOptions& opts)
    : Session(model, opts, policy_context(model)) {}

Session::Session(std::shared_ptr<const Model> model, const SessionOptions& opts,
                 const PolicyContext& policy_ctx)
    : model_(std::move(model)),
      opts_(opts),
      shape_(shape_of(model_->config())),
      policy_ctx_(policy_ctx),
      policy_(opts.external_policy ? nullptr : policy_from_spec(opts.policy, policy_ctx_)),
      active_policy_(opts.external_policy ? opts.external_policy : policy_.get()),
      facets_(*active_policy_),
      cache_(shape_, opts.kv_type, resolve_context(model_->config(), opts.n_ctx), facets_.tiering(),
             std::max(opts.prefill_chunk, 1)) {
  if (opts_.prefill_chunk < 1) fail("prefill chunk must be >= 1 (got {})", opts_.prefill_chunk);
  check_kv_memory();
  logits_.resize(model_->config().n_vocab);
  global_layers_ = shape_.global_layers();
}

// The cache commits its pages as rows are written: a context the machine cannot hold is refused
// here, not killed for halfway through.
void Session::check_kv_memory() const {
  const char* off = std::getenv("FASA_MEMORY_CHECK");
  if (off && std::string(off) == "off") return;
  const uint64_t need = cache_.ram_bytes_full();
  const AvailableMemory a = available_memory();
  if (need <= a.bytes) return;
  fail(
      "policy '{}': the KV cache needs {} of RAM at {} tokens ({}{}) but {} is available ({}): "
      "use a shorter context (-c), --kv-type q8_0, or FASA-M (--policy fasa --variant m), which "
      "keeps most of the KV in a file; FASA_MEMORY_CHECK=off skips this check",
      active_policy_->name(), format_bytes(need), cache_.capacity(), kv_type_name(cache_.type()),
      cache_.tiered() ? ", FASA-M's RAM part" : "", format_bytes(a.bytes), a.source);
}

void Session::reset() {
  cache_.clear();
  if (!opts_.external_policy) {
    // A fresh policy over the same options: it asks for the same cache layout.
    policy_ = policy_from_spec(opts_.policy, policy_ctx_);
    active_policy_ = policy_.get();
    facets_ = PolicyFacets(*active_policy_);
  }
  attn_stats_ = AttnStats{};
  kv_resident_peak_ = 0;
  keep_rows_ = false;
}

uint64_t Session::kv_resident_bytes() const {
  return cache_.ram_bytes() + active_policy_->resident_bytes();
}

void Session::free_evicted(bool now) {
  if (!facets_.eviction || keep_rows_ || !opts_.free_evicted_rows || cache_.tiered()) return;
  int horizon = 0;
  for (int l : global_layers_) {
    for (int g = 0; g < shape_.n_kv_heads; ++g) {
      if (facets_.eviction->kept_slots(l, g, &horizon, &kept_)) {
        cache_.evict(l, g, kept_, horizon, now);
      }
    }
  }
}

void Session::copy_prefix_from(const Session& src) {
  copy_prefix_from(src, src.n_past(), src.active_policy_);
}

void Session::copy_prefix_from(const Session& src, int n, const AttentionPolicy* state) {
  if (src.model_ != model_) fail("cannot copy a prefix between sessions of different models");
  const bool wants = facets_.prefill != nullptr;
  const bool needs = facets_.needs_prefill_queries();
  const AttentionPolicy* source =
      wants && state ? prefill_state_source(*state, active_policy_->name()) : nullptr;
  // A policy that can do without (calib=online) takes a whole prefill's statistics or none.
  if (!needs && n != src.n_past()) source = nullptr;
  if (needs && !source) {
    fail(
        "policy '{}' learns from the prefill queries, which a copy of a '{}' session's cache "
        "does not carry: prefill it itself, or copy from a '{}' session",
        active_policy_->name(), state ? state->name() : src.active_policy_->name(),
        active_policy_->name());
  }
  if (needs && n != src.n_past()) {
    fail("policy '{}' learns from every prefill query: it can take all {} tokens or none, not {}",
         active_policy_->name(), src.n_past(), n);
  }
  cache_.check_copy_prefix(src.cache_, n);
  // First, so that a refusal (a source that has decoded already) leaves this session unchanged.
  if (source) facets_.prefill->copy_prefill_state_from(*source);
  cache_.copy_prefix_from(src.cache_, n);
  WorkspaceScope bind(scratch_.work);
  for (int l : shape_.global_layers()) {  // as forward: sliding-window layers are no policy's
    active_policy_->on_append(cache_, l, 0, cache_.n_used());
  }
  if (n == src.n_past()) logits_ = src.logits_;
}

void Session::restore_prefix(int n, const std::function<void(KvCache&)>& write,
                             const std::vector<float>& logits) {
  if (n_past() != 0) fail("a saved prefix goes into an empty session ({} tokens held)", n_past());
  if (cache_.tiered()) fail("a tiered (FASA-M) KV cache cannot take a saved prefix");
  if (facets_.needs_prefill_queries()) {
    fail("policy '{}' learns from the prefill queries, which a saved prefix does not hold",
         active_policy_->name());
  }
  if (n < 1 || n > n_ctx())
    fail("a saved prefix of {} tokens does not fit a context of {}", n, n_ctx());
  FASA_CHECK(logits.size() == logits_.size());
  write(cache_);
  std::vector<int32_t> pos(n);
  for (int i = 0; i < n; ++i) pos[i] = i;
  cache_.commit(n, pos.data());
  WorkspaceScope bind(scratch_.work);
  for (int l : shape_.global_layers()) active_policy_->on_append(cache_, l, 0, n);
  logits_ = logits;
}

void Session::replay_prefill_queries(const QueryWindow& w, int n) {
  PrefillObserver* p = facets_.prefill;
  if (!p || p->needs_prefill_queries()) return;
  const int upto = std::min(n, n_past());  // the slots this session holds
  for (size_t r = 0; r < global_layers_.size(); ++r) {
    const int row = static_cast<int>(r);
    for (int j = 0; j < w.size(row) && w.slot(row, j) < upto; ++j) {  // slots ascend
      p->on_prefill_queries(cache_, global_layers_[r], w.slot(row, j), 1, w.query(row, j, 0));
    }
  }
}

bool Session::can_copy_prefix_from(const Session& src) const {
  return !facets_.needs_prefill_queries() ||
         prefill_state_source(*src.active_policy_, active_policy_->name()) != nullptr;
}

void Session::check_tokens(const int32_t* tokens, int n) const {
  const int n_vocab = model_->config().n_vocab;
  for (int i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab) {
      fail("token id {} is out of range [0, {})", tokens[i], n_vocab);
    }
  }
  if (n_past() + n > n_ctx()) {
    fail("context overflow: {} tokens in the cache + {} new > context size {}", n_past(), n,
         n_ctx());
  }
}

void Session::run(const int32_t* tokens, int n, bool all_logits, float* logits) {
  interruption_point();  // before anything changes: a check that throws leaves the session as is
  pos_.resize(n);
  for (int i = 0; i < n; ++i) pos_[i] = n_past() + i;
  before_append(n);
  forward(*model_, cache_, facets_, tokens, pos_.data(), n, all_logits, logits, scratch_,
          &attn_stats_);
  after_append(n);
}

const std::vector<float>& Session::prefill(const std::vector<int32_t>& tokens,
                                           const std::function<void(int, int)>& progress) {
  const int n = static_cast<int>(tokens.size());
  if (n == 0) fail("nothing to prefill (empty token list)");
  check_tokens(tokens.data(), n);
  for (int i = 0; i < n;) {
    const int m = prefill_chunk_size(n - i, opts_.prefill_chunk);
    run(tokens.data() + i, m, false, logits_.data());
    i += m;
    if (progress) progress(i, n);
  }
  return logits_;
}

const std::vector<float>& Session::decode(int32_t token) {
  check_tokens(&token, 1);
  run(&token, 1, false, logits_.data());
  kv_resident_peak_ = std::max(kv_resident_peak_, kv_resident_bytes());
  return logits_;
}

void Session::forward_many(const std::vector<SessionChunk>& chunks, ForwardScratch& scratch) {
  if (chunks.empty()) return;
  const Model* model = chunks[0].session->model_.get();
  std::vector<SeqChunk> seqs;  // [n_seq]
  seqs.reserve(chunks.size());
  for (const SessionChunk& ch : chunks) {
    Session& s = *ch.session;
    if (s.model_.get() != model) fail("a batch may only hold sessions of one model");
    if (ch.n_tok < 1 || ch.n_tok > s.opts_.prefill_chunk) {
      fail("a batch chunk must hold 1 to {} tokens (got {})", s.opts_.prefill_chunk, ch.n_tok);
    }
    for (const SeqChunk& other : seqs) {
      if (other.cache == &s.cache_) fail("a session may appear only once in a batch");
    }
    s.check_tokens(ch.tokens, ch.n_tok);
    s.pos_.resize(ch.n_tok);
    for (int i = 0; i < ch.n_tok; ++i) s.pos_[i] = s.n_past() + i;
    seqs.push_back(SeqChunk{&s.cache_, &s.facets_, ch.tokens, s.pos_.data(), ch.n_tok, false,
                            s.logits_.data(), &s.attn_stats_});
  }
  for (const SessionChunk& ch : chunks) ch.session->before_append(ch.n_tok);
  forward_batch(*model, seqs.data(), static_cast<int>(seqs.size()), scratch);
  for (const SessionChunk& ch : chunks) ch.session->after_append(ch.n_tok);
}

void Session::save_point() {
  if (cache_.tiered()) {
    fail("lossless decoding cannot take back tokens in a tiered KV cache (FASA-M): use FASA-C");
  }
  if (cache_.any_evicted()) {
    fail(
        "lossless decoding needs every row of the KV cache, and policy '{}' has freed the rows "
        "it evicted: start lossless decoding before the first decode step",
        active_policy_->name());
  }
  keep_rows_ = true;  // verification reads every row from now on
  mark_ = n_past();
  verified_ = 0;
  if (facets_.rewind) facets_.rewind->save_point();
}

void Session::rollback() {
  FASA_CHECK(mark_ >= 0 && mark_ <= n_past());
  cache_.truncate(mark_);
  WorkspaceScope bind(scratch_.work);
  if (facets_.rewind) facets_.rewind->rollback(cache_, mark_);
}

void Session::verify(const int32_t* tokens, int n, float* logits) {
  FASA_CHECK(n >= 1 && n <= kMaxVerify);
  check_tokens(tokens, n);
  if (!verify_policy_) {
    verify_policy_ = make_policy("full", policy_ctx_);
    verify_facets_ = PolicyFacets(*verify_policy_);
  }
  pos_.resize(n);
  for (int i = 0; i < n; ++i) pos_[i] = n_past() + i;
  forward(*model_, cache_, verify_facets_, tokens, pos_.data(), n, true, logits, scratch_, nullptr);
  verified_ = n;
}

void Session::keep_verified(int n_keep) {
  FASA_CHECK(n_keep >= 0 && n_keep <= verified_ && n_past() - verified_ >= 0);
  const int first = n_past() - verified_;
  cache_.truncate(first + n_keep);
  verified_ = 0;
  if (n_keep == 0) return;
  WorkspaceScope bind(scratch_.work);
  for (int l : shape_.global_layers()) active_policy_->on_append(cache_, l, first, n_keep);
}

std::vector<float> Session::eval_all(const std::vector<int32_t>& tokens, int chunk) {
  const int n = static_cast<int>(tokens.size());
  if (chunk < 1) fail("chunk must be >= 1 (got {})", chunk);
  check_tokens(tokens.data(), n);
  const size_t n_vocab = model_->config().n_vocab;
  std::vector<float> out(static_cast<size_t>(n) * n_vocab);  // [n_tok, n_vocab]
  for (int i = 0; i < n; i += chunk) {
    const int m = std::min(chunk, n - i);
    run(tokens.data() + i, m, true, out.data() + static_cast<size_t>(i) * n_vocab);
  }
  return out;
}

}  // namespace fasa
