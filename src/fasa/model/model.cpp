#include "fasa/model/model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "fasa/core/error.h"
#include "fasa/core/isa.h"
#include "fasa/core/sha256.h"
#include "fasa/io/gguf.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/repack.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

namespace {

const GgufTensorInfo& require_tensor(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  if (t == nullptr) fail("{}: missing tensor '{}'", f.path(), name);
  const DTypeInfo* info = dtype_info(static_cast<uint32_t>(t->type));
  if (info == nullptr || !info->supported) {
    fail("{}: tensor '{}' has type {} which this engine cannot compute with", f.path(), name,
         info ? std::string(info->name) : std::to_string(static_cast<uint32_t>(t->type)));
  }
  return *t;
}

std::string shape_str(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

WeightMatrix bind_matrix(const GgufFile& f, const std::string& name, int64_t n_out, int64_t n_in) {
  const GgufTensorInfo& t = require_tensor(f, name);
  if (t.ne.size() != 2 || t.ne[0] != n_in || t.ne[1] != n_out) {
    fail("{}: tensor '{}' has shape {}, expected [{}, {}]", f.path(), name, shape_str(t.ne), n_in,
         n_out);
  }
  return WeightMatrix{t.type, t.data, n_out, n_in, t.n_bytes};
}

// Rows [first, first + n) of a matrix (fused matrices hold several projections' rows).
WeightMatrix row_slice(const WeightMatrix& m, int64_t first, int64_t n) {
  const uint64_t row_bytes = m.n_bytes / static_cast<uint64_t>(m.n_out);
  return WeightMatrix{m.type, static_cast<const uint8_t*>(m.data) + first * row_bytes, n, m.n_in,
                      row_bytes * static_cast<uint64_t>(n)};
}

}  // namespace

void Model::FreeBytes::operator()(uint8_t* p) const { std::free(p); }

// Every projection matrix of a repackable type and shape gets an interleaved copy; the file's
// pages it was read from are dropped from this process (the page cache may keep them), so
// resident memory holds one copy. A tied output matrix is the embedding table too: the
// embedding then reads its rows from the copy (forward.cpp).
void Model::repack_matrices() {
  std::vector<WeightMatrix*> ms;
  for (LayerWeights& L : weights_.layers) {
    for (WeightMatrix* p : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      ms.push_back(p);
    }
  }
  const bool tied = weights_.output.data == weights_.tok_embd.data;
  ms.push_back(&weights_.output);
  const long page = ::sysconf(_SC_PAGESIZE);
  for (WeightMatrix* w : ms) {
    if (!repackable(w->type, w->n_out, w->n_in)) continue;
    const DType rt = repacked_type(w->type);
    const uint64_t n = static_cast<uint64_t>(w->n_out * w->n_in / dtype_info(rt).block_elems) *
                       static_cast<uint64_t>(dtype_info(rt).block_bytes);
    auto* dst = static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64));
    if (dst == nullptr)
      fail("out of memory repacking a {}-byte matrix (FASA_NO_REPACK=1 skips it)", n);
    repacked_.emplace_back(dst);
    repacked_bytes_ += n;
    repack_rows16(w->type, w->data, w->n_out, w->n_in, dst);
    // Whole pages inside the source range only: a neighbouring tensor's pages stay.
    const auto lo = reinterpret_cast<uintptr_t>(w->data);
    const uintptr_t first = (lo + page - 1) / page * page, last = (lo + w->n_bytes) / page * page;
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
    *w = WeightMatrix{rt, dst, w->n_out, w->n_in, n};
  }
  if (tied) weights_.tok_embd = weights_.output;
}

std::string Model::repack_status() const {
  if (!repack_off_.empty()) return repack_off_;
  if (repacked_.empty()) {
    return "off (no Q4_0, Q4_1, Q8_0, Q4_K or Q6_K matrix with whole groups of 16 rows)";
  }
  return fmt::format("on ({} matrices, {:.1f} MiB)", repacked_.size(), repacked_bytes_ / 1048576.0);
}

const Tokenizer& Model::require_tokenizer() const {
  if (!tokenizer_) fail("{}: the model file has no tokenizer metadata", file_->path());
  return *tokenizer_;
}

uint64_t Model::weight_bytes() const {
  uint64_t n = 0;
  for (const auto& t : file_->tensors()) n += t.n_bytes;
  return n;
}

namespace {

// Tensors a file may carry that no architecture binds, each with its reason. Empty: every
// tensor llama.cpp's converter writes for the supported families is bound, and llama.cpp itself
// refuses a file with tensors it did not create. A name is matched with its layer number
// replaced by N ("blk.N.attn_rot_embd").
struct IgnoredTensor {
  const char* name;
  const char* reason;
};
constexpr std::array<IgnoredTensor, 0> kIgnoredTensors{};

std::string layer_pattern(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return name;
  size_t i = 4;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  return "blk.N" + name.substr(i);
}

}  // namespace

const RopeTable& Model::rope_table(int n_ctx, bool local) const {
  if (local) return rope_local_;
  return long_rope_factors(config_.rope_scaling, n_ctx) ? rope_long_ : rope_short_;
}

namespace {

// Binds tensors of one file by name, remembering which were bound (the loader is strict).
struct Binder {
  const GgufFile& f;
  const ModelConfig& c;
  std::vector<std::vector<float>>& owned;  // vectors converted to f32
  std::set<std::string> bound;             // names of the tensors bound so far

  const GgufTensorInfo& tensor(const std::string& name) {
    bound.insert(name);
    return require_tensor(f, name);
  }
  WeightMatrix matrix(const std::string& name, int64_t n_out, int64_t n_in) {
    bound.insert(name);
    return bind_matrix(f, name, n_out, n_in);
  }
  // Norm vectors: f32 in practice; other float types are converted once and owned.
  const float* vector(const std::string& name, int64_t n) {  // [n]
    const GgufTensorInfo& t = tensor(name);
    if (t.n_elements != n || t.ne.size() != 1) {
      fail("{}: tensor '{}' has shape {}, expected [{}]", f.path(), name, shape_str(t.ne), n);
    }
    if (t.type == DType::F32) return reinterpret_cast<const float*>(t.data);
    if (n % dtype_info(t.type).block_elems != 0) {
      fail("{}: tensor '{}' length {} is not a whole number of {} blocks", f.path(), name, n,
           dtype_name(t.type));
    }
    auto& v = owned.emplace_back(static_cast<size_t>(n));
    dequantize_row(t.type, t.data, v.data(), n);
    return v.data();
  }
  // RoPE factor tables ([rope_dim / 2] or null when absent): positive and finite, or the
  // rotation would be garbage.
  const float* factors(const std::string& name) {
    if (f.find_tensor(name) == nullptr) return nullptr;
    const float* v = vector(name, c.rope_dim / 2);
    for (int i = 0; i < c.rope_dim / 2; ++i) {
      if (!(v[i] > 0.0f && v[i] < 1e30f)) {
        fail("{}: tensor '{}' element {} = {} must be a positive finite factor", f.path(), name, i,
             v[i]);
      }
    }
    return v;
  }
};

// Embedding, output head and RoPE factor tables (one kind at most).
void bind_globals(Binder& b, ModelWeights& w) {
  const ModelConfig& c = b.c;
  const std::string& path = b.f.path();
  w.tok_embd = b.matrix("token_embd.weight", c.n_vocab, c.d_model);
  w.output_norm = b.vector("output_norm.weight", c.d_model);
  w.output = c.tied_output ? w.tok_embd : b.matrix("output.weight", c.n_vocab, c.d_model);
  w.rope_factors.freq_factors = b.factors("rope_freqs.weight");
  w.rope_factors.long_factors = b.factors("rope_factors_long.weight");
  w.rope_factors.short_factors = b.factors("rope_factors_short.weight");
  if (w.rope_factors.freq_factors != nullptr &&
      (w.rope_factors.long_factors != nullptr || w.rope_factors.short_factors != nullptr)) {
    fail(
        "{}: the file has both rope_freqs.weight and rope_factors_long/short.weight; only one "
        "kind of RoPE factor table is supported",
        path);
  }
  if ((w.rope_factors.long_factors == nullptr) != (w.rope_factors.short_factors == nullptr)) {
    fail("{}: rope_factors_long.weight and rope_factors_short.weight must come together", path);
  }
}

// Layer l's weights; fused matrices (phi3) are bound as row slices.
LayerWeights bind_layer(Binder& b, int l) {
  const ModelConfig& c = b.c;
  const int64_t d = c.d_model, q_dim = int64_t{c.n_heads} * c.head_dim,
                kv_dim = int64_t{c.n_kv_heads} * c.head_dim;
  const std::string p = fmt::format("blk.{}.", l);
  LayerWeights L;
  L.attn_norm = b.vector(p + "attn_norm.weight", d);
  if (c.fused_qkv) {  // rows: Q [q_dim], then K [kv_dim], then V [kv_dim]
    const WeightMatrix qkv = b.matrix(p + "attn_qkv.weight", q_dim + 2 * kv_dim, d);
    L.wq = row_slice(qkv, 0, q_dim);
    L.wk = row_slice(qkv, q_dim, kv_dim);
    L.wv = row_slice(qkv, q_dim + kv_dim, kv_dim);
  } else {
    L.wq = b.matrix(p + "attn_q.weight", q_dim, d);
    L.wk = b.matrix(p + "attn_k.weight", kv_dim, d);
    L.wv = b.matrix(p + "attn_v.weight", kv_dim, d);
  }
  if (c.qkv_bias) {
    L.bq = b.vector(p + "attn_q.bias", q_dim);
    L.bk = b.vector(p + "attn_k.bias", kv_dim);
    L.bv = b.vector(p + "attn_v.bias", kv_dim);
  }
  if (c.qk_norm) {
    L.q_norm = b.vector(p + "attn_q_norm.weight", c.head_dim);
    L.k_norm = b.vector(p + "attn_k_norm.weight", c.head_dim);
  }
  L.wo = b.matrix(p + "attn_output.weight", d, q_dim);
  if (c.post_norms) {
    L.attn_post_norm = b.vector(p + "post_attention_norm.weight", d);
    L.ffn_post_norm = b.vector(p + "post_ffw_norm.weight", d);
  }
  L.ffn_norm = b.vector(p + "ffn_norm.weight", d);
  if (c.fused_gate_up) {  // rows: gate [d_ff], then up [d_ff] (llama.cpp's swiglu halves)
    const WeightMatrix gate_up = b.matrix(p + "ffn_up.weight", 2 * int64_t{c.d_ff}, d);
    L.w_gate = row_slice(gate_up, 0, c.d_ff);
    L.w_up = row_slice(gate_up, c.d_ff, c.d_ff);
  } else {
    L.w_gate = b.matrix(p + "ffn_gate.weight", c.d_ff, d);
    L.w_up = b.matrix(p + "ffn_up.weight", c.d_ff, d);
  }
  L.w_down = b.matrix(p + "ffn_down.weight", d, c.d_ff);
  return L;
}

// Strict: a tensor nothing bound could carry math this engine would silently skip. Returns the
// unbound tensors on the ignore list; any other fails.
std::vector<std::string> check_all_bound(const Binder& b) {
  std::vector<std::string> ignored, unbound;
  for (const GgufTensorInfo& t : b.f.tensors()) {
    if (b.bound.count(t.name) != 0) continue;
    const std::string pattern = layer_pattern(t.name);
    const bool ignorable = std::any_of(kIgnoredTensors.begin(), kIgnoredTensors.end(),
                                       [&](const IgnoredTensor& e) { return pattern == e.name; });
    if (ignorable) {
      ignored.push_back(t.name);
    } else {
      unbound.push_back(t.name);
    }
  }
  if (!unbound.empty()) {
    std::string list;
    const size_t shown = std::min<size_t>(unbound.size(), 8);
    for (size_t i = 0; i < shown; ++i) list += (i ? ", '" : "'") + unbound[i] + "'";
    if (unbound.size() > shown) list += fmt::format(" and {} more", unbound.size() - shown);
    fail(
        "{}: tensor{} {} not used by architecture '{}'; refusing the file rather than "
        "ignoring weights (see docs/MODELS.md, strict loading)",
        b.f.path(), unbound.size() > 1 ? "s" : "", list, b.c.arch);
  }
  return ignored;
}

// Why matrices are not repacked, or "" to repack them. Only the AVX-512 kernels read the
// interleaved layout faster than the file's (the others rebuild each block: the same bits,
// slower).
std::string repack_off_reason(const LoadOptions& opts) {
  const char* no_repack = std::getenv("FASA_NO_REPACK");
  if (!opts.repack) return "off (disabled)";
  if (no_repack != nullptr && *no_repack != '\0' && std::string(no_repack) != "0") {
    return "off (FASA_NO_REPACK)";
  }
  if (active_isa() != Isa::Avx512) return "off (instruction set is not avx512)";
  return "";
}

}  // namespace

std::shared_ptr<const Model> Model::load(const std::string& path, const LoadOptions& opts) {
  std::shared_ptr<Model> m(new Model());
  m->file_ = GgufFile::open(path);
  const GgufFile& f = *m->file_;
  m->config_ = ModelConfig::from_gguf(f);
  ModelConfig& c = m->config_;
  if (opts.rope_layout_override) c.rope_layout = *opts.rope_layout_override;
  Binder b{f, c, m->owned_, {}};
  ModelWeights& w = m->weights_;
  bind_globals(b, w);
  w.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) w.layers[l] = bind_layer(b, l);
  m->ignored_ = check_all_bound(b);
  m->make_rope_tables();
  m->repack_off_ = repack_off_reason(opts);
  if (m->repack_off_.empty()) m->repack_matrices();
  if (opts.load_tokenizer && f.find("tokenizer.ggml.model") != nullptr) {
    m->tokenizer_ = Tokenizer::from_gguf(f);
    if (m->tokenizer_->n_vocab() > c.n_vocab) {
      fail("{}: tokenizer has {} tokens but the embedding has {} rows", f.path(),
           m->tokenizer_->n_vocab(), c.n_vocab);
    }
  }
  return m;
}

void Model::make_rope_tables() {
  const ModelConfig& c = config_;
  for (bool long_factors : {false, true}) {
    (long_factors ? rope_long_ : rope_short_) =
        make_rope_table(c.rope_base, c.rope_dim, c.rope_scaling, weights_.rope_factors,
                        long_factors);
  }
  if (c.n_windowed_layers() > 0) {
    rope_local_ = make_rope_table(c.rope_base_local, c.rope_dim, c.rope_scaling, {}, false, false);
  }
}

const std::string& Model::sha256() const {
  std::call_once(sha256_->once, [this] { sha256_->hex = sha256_file_hex(file_->path()); });
  return sha256_->hex;
}

std::string model_identity(const Model& model) { return model.sha256(); }

}  // namespace fasa
