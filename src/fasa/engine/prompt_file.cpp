#include "fasa/engine/prompt_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

#include "fasa/core/error.h"
#include "fasa/core/input_file.h"
#include "fasa/core/sha256.h"
#include "fasa/io/atomic_file.h"

namespace fasa {

namespace {

constexpr char kMagic[8] = {'F', 'A', 'S', 'A', 'P', 'R', 'C', '1'};
constexpr uint32_t kVersion = 2;  // 2: the prompt queries after the logits
constexpr size_t kHexBytes = 64;
constexpr size_t kFixedHeaderBytes = sizeof(kMagic) + 7 * 4 + kHexBytes;  // up to the layers

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }

// Reads the file's fields in order; every read checks the bytes are there.
class Reader {
 public:
  Reader(const std::string& path, std::string_view bytes) : path_(path), b_(bytes) {}
  const char* take(size_t n) {
    if (b_.size() - at_ < n) fail("prompt cache {}: cut short (damaged file)", path_);
    const char* p = b_.data() + at_;
    at_ += n;
    return p;
  }
  uint32_t u32() {
    uint32_t v;
    std::memcpy(&v, take(4), 4);
    return v;
  }
  size_t at() const { return at_; }

 private:
  const std::string& path_;
  std::string_view b_;
  size_t at_ = 0;
};

struct Header {
  uint32_t version = 0;
  uint32_t kv_type = 0, n_layers = 0, n_kv_heads = 0, head_dim = 0, n_vocab = 0, n_tokens = 0;
  std::string model_sha256;
  std::vector<uint32_t> rows, ring;  // [n_layers]
};

// with_layers: the per-layer row and ring counts too.
Header read_header(const std::string& path, Reader& r, bool with_layers) {
  if (std::memcmp(r.take(sizeof(kMagic)), kMagic, sizeof(kMagic)) != 0) {
    fail("{} is not a fasa prompt cache (no FASAPRC1 header)", path);
  }
  const uint32_t version = r.u32();
  if (version != 1 && version != kVersion) {
    fail("prompt cache {} has version {}; this build reads versions 1 and {}", path, version,
         kVersion);
  }
  Header h;
  h.version = version;
  h.kv_type = r.u32();
  h.n_layers = r.u32();
  h.n_kv_heads = r.u32();
  h.head_dim = r.u32();
  h.n_vocab = r.u32();
  h.n_tokens = r.u32();
  h.model_sha256.assign(r.take(kHexBytes), kHexBytes);
  if (h.n_layers == 0 || h.n_layers > 4096 || h.n_tokens == 0 || h.n_tokens > (1u << 24) ||
      !is_sha256_hex(h.model_sha256)) {
    fail("prompt cache {}: damaged header", path);
  }
  if (!with_layers) return h;
  h.rows.resize(h.n_layers);
  h.ring.resize(h.n_layers);
  for (auto& x : h.rows) x = r.u32();
  for (auto& x : h.ring) x = r.u32();
  return h;
}

std::string read_file(const std::string& path) { return read_input_file(path, "prompt cache"); }

// The prompt queries s's policy keeps (none: one u32 0).
void put_queries(std::string& out, const Session& s) {
  const OnlineCalibrationInfo* oc = s.facets().online_calibration();
  const QueryWindow* w = oc ? oc->prompt_queries : nullptr;
  const AttnShape& shape = s.cache().shape();
  const int n_global = static_cast<int>(shape.global_layers().size());
  if (!w || w->size(0) == 0) {
    put_u32(out, 0);
    return;
  }
  put_u32(out, static_cast<uint32_t>(n_global));
  put_u32(out, static_cast<uint32_t>(shape.n_heads));
  const size_t per = static_cast<size_t>(shape.n_heads) * shape.head_dim;  // one query row
  for (int r = 0; r < n_global; ++r) {
    put_u32(out, static_cast<uint32_t>(w->size(r)));
    for (int j = 0; j < w->size(r); ++j) put_u32(out, static_cast<uint32_t>(w->slot(r, j)));
    for (int j = 0; j < w->size(r); ++j) {
      out.append(reinterpret_cast<const char*>(w->query(r, j, 0)), per * sizeof(float));
    }
  }
}

// Reads the queries section (version 2) into *out (null: none saved), checked against the
// model's shape and the file's n_tokens.
void read_queries(const std::string& path, Reader& r, const Header& h, const AttnShape& shape,
                  std::unique_ptr<QueryWindow>* out) {
  const uint32_t n_layers = r.u32();
  if (n_layers == 0) return;
  const std::vector<int> global = shape.global_layers();
  if (n_layers != global.size() || r.u32() != static_cast<uint32_t>(shape.n_heads)) {
    fail("prompt cache {}: damaged (its queries are not the model's shape)", path);
  }
  const size_t per = static_cast<size_t>(shape.n_heads) * shape.head_dim;
  std::vector<uint32_t> held(n_layers);
  std::vector<std::vector<int32_t>> slots(n_layers);
  std::vector<const char*> q(n_layers);
  uint32_t most = 1;
  for (uint32_t l = 0; l < n_layers; ++l) {
    held[l] = r.u32();
    if (held[l] > h.n_tokens) fail("prompt cache {}: damaged (queries of layer {})", path, l);
    slots[l].resize(held[l]);
    for (uint32_t j = 0; j < held[l]; ++j) {
      slots[l][j] = static_cast<int32_t>(r.u32());
      if (slots[l][j] < 0 || static_cast<uint32_t>(slots[l][j]) >= h.n_tokens ||
          (j > 0 && slots[l][j] <= slots[l][j - 1])) {
        fail("prompt cache {}: damaged (query slots of layer {})", path, l);
      }
    }
    q[l] = r.take(held[l] * per * sizeof(float));
    most = std::max(most, held[l]);
  }
  if (!out) return;
  auto w = std::make_unique<QueryWindow>(shape, static_cast<int>(most));
  std::vector<float> row(per);
  for (uint32_t l = 0; l < n_layers; ++l) {
    for (uint32_t j = 0; j < held[l]; ++j) {
      std::memcpy(row.data(), q[l] + j * per * sizeof(float), per * sizeof(float));
      w->add(static_cast<int>(l), slots[l][j], 1, row.data());
    }
  }
  *out = std::move(w);
}

}  // namespace

void save_prompt_file(const std::string& path, const Session& s,
                      const std::vector<int32_t>& tokens) {
  const KvCache& c = s.cache();
  if (c.tiered()) fail("--prompt-cache: a tiered (FASA-M) KV cache cannot be saved");
  if (c.any_evicted()) fail("--prompt-cache: the cache's evicted rows were freed already");
  const int n = s.n_past();
  if (n < 1 || static_cast<size_t>(n) != tokens.size()) {
    fail("--prompt-cache: the session holds {} tokens, not the {} given", n, tokens.size());
  }
  const AttnShape& shape = c.shape();
  std::string out(kMagic, sizeof(kMagic));
  put_u32(out, kVersion);
  for (int v : {static_cast<int>(c.type()), shape.n_layers, shape.n_kv_heads, shape.head_dim,
                static_cast<int>(s.last_logits().size()), n}) {
    put_u32(out, static_cast<uint32_t>(v));
  }
  out += s.policy_ctx().model_sha256();
  std::vector<int> rows(shape.n_layers);
  for (int l = 0; l < shape.n_layers; ++l) {
    rows[l] = shape.window(l) > 0 ? std::min(n, c.layer_capacity(l)) : n;
    put_u32(out, static_cast<uint32_t>(rows[l]));
  }
  for (int l = 0; l < shape.n_layers; ++l) {
    put_u32(out, shape.window(l) > 0 ? static_cast<uint32_t>(c.layer_capacity(l)) : 0u);
  }
  out.append(reinterpret_cast<const char*>(tokens.data()), tokens.size() * sizeof(int32_t));
  for (int l = 0; l < shape.n_layers; ++l) {
    const size_t bytes = static_cast<size_t>(rows[l]) * c.row_bytes();
    for (int g = 0; g < shape.n_kv_heads; ++g) {
      out.append(static_cast<const char*>(c.k_rows(l, g)), bytes);
      out.append(static_cast<const char*>(c.v_rows(l, g)), bytes);
    }
  }
  out.append(reinterpret_cast<const char*>(s.last_logits().data()),
             s.last_logits().size() * sizeof(float));
  put_queries(out, s);
  out += sha256_hex(out);
  AtomicFile f(path);
  f.write(out);
  f.commit();
}

PromptFileInfo peek_prompt_file(const std::string& path) {
  const int fd = open_input_file(path, "prompt cache");
  std::string bytes(kFixedHeaderBytes, '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(got);
  Reader r(path, bytes);
  const Header h = read_header(path, r, false);
  return {static_cast<int>(h.n_tokens), h.model_sha256, h.kv_type};
}

void check_prompt_file_for(const PromptFileInfo& info, const std::string& path, const Session& s) {
  if (info.model_sha256 != s.policy_ctx().model_sha256()) {
    fail("prompt cache {} was made with another model (sha256 {}...)", path,
         info.model_sha256.substr(0, 12));
  }
  if (info.kv_type != static_cast<uint32_t>(s.cache().type())) {
    fail("prompt cache {} holds another KV type: pass the --kv-type it was made with", path);
  }
}

std::vector<int32_t> load_prompt_file(const std::string& path, Session& s,
                                      std::unique_ptr<QueryWindow>* queries) {
  if (queries) queries->reset();
  const std::string bytes = read_file(path);
  if (bytes.size() < kHexBytes ||
      sha256_hex(std::string_view(bytes).substr(0, bytes.size() - kHexBytes)) !=
          std::string_view(bytes).substr(bytes.size() - kHexBytes)) {
    // The magic first, so that another kind of file is named as such.
    if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
      fail("{} is not a fasa prompt cache (no FASAPRC1 header)", path);
    }
    fail("prompt cache {}: checksum mismatch (damaged file)", path);
  }
  Reader r(path, std::string_view(bytes).substr(0, bytes.size() - kHexBytes));
  const Header h = read_header(path, r, true);
  const KvCache& c = s.cache();
  const AttnShape& shape = c.shape();
  check_prompt_file_for({static_cast<int>(h.n_tokens), h.model_sha256, h.kv_type}, path, s);
  if (static_cast<int>(h.n_layers) != shape.n_layers ||
      static_cast<int>(h.n_kv_heads) != shape.n_kv_heads ||
      static_cast<int>(h.head_dim) != shape.head_dim || h.n_vocab != s.last_logits().size()) {
    fail("prompt cache {}: damaged header (its shape is not the model's)", path);
  }
  const int n = static_cast<int>(h.n_tokens);
  if (n > s.n_ctx()) {
    fail("prompt cache {} holds {} tokens, more than the context of {}", path, n, s.n_ctx());
  }
  for (int l = 0; l < shape.n_layers; ++l) {
    const int cap = shape.window(l) > 0 ? c.layer_capacity(l) : 0;
    const int want_rows = cap > 0 ? std::min(n, cap) : n;
    if ((cap == 0) != (h.ring[l] == 0)) fail("prompt cache {}: damaged header (layer {})", path, l);
    // A ring that wrapped keeps slot s at row s % ring: the ring sizes must agree.
    if (cap > 0 && n > std::min(cap, static_cast<int>(h.ring[l])) &&
        cap != static_cast<int>(h.ring[l])) {
      fail(
          "prompt cache {} was made with another prefill chunk (sliding-window rings of {} rows, "
          "{} here)",
          path, h.ring[l], cap);
    }
    if (static_cast<int>(h.rows[l]) != want_rows) {
      fail("prompt cache {}: damaged header (layer {})", path, l);
    }
  }
  std::vector<int32_t> tokens(n);
  std::memcpy(tokens.data(), r.take(sizeof(int32_t) * n), sizeof(int32_t) * n);
  for (int32_t t : tokens) {
    if (t < 0 || static_cast<uint32_t>(t) >= h.n_vocab) {
      fail("prompt cache {}: damaged (token id {})", path, t);
    }
  }
  std::vector<const char*> k(static_cast<size_t>(shape.n_layers) * shape.n_kv_heads),
      v(k.size());  // [n_layers, n_kv_heads] where the rows are in `bytes`
  for (int l = 0; l < shape.n_layers; ++l) {
    const size_t b = static_cast<size_t>(h.rows[l]) * c.row_bytes();
    for (int g = 0; g < shape.n_kv_heads; ++g) {
      k[l * shape.n_kv_heads + g] = r.take(b);
      v[l * shape.n_kv_heads + g] = r.take(b);
    }
  }
  std::vector<float> logits(h.n_vocab);
  std::memcpy(logits.data(), r.take(sizeof(float) * h.n_vocab), sizeof(float) * h.n_vocab);
  if (h.version >= 2) read_queries(path, r, h, shape, queries);
  if (r.at() != bytes.size() - kHexBytes) fail("prompt cache {}: trailing bytes (damaged)", path);
  s.restore_prefix(
      n,
      [&](KvCache& cache) {
        for (int l = 0; l < shape.n_layers; ++l) {
          for (int g = 0; g < shape.n_kv_heads; ++g) {
            const size_t i = static_cast<size_t>(l) * shape.n_kv_heads + g;
            cache.write_rows(l, g, 0, static_cast<int>(h.rows[l]), k[i], v[i]);
          }
        }
      },
      logits);
  return tokens;
}

}  // namespace fasa
