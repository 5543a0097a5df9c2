// GGUF v2/v3 reader. Layout (all little-endian):
//   header      : magic "GGUF" u32 version, u64 tensor_count, u64 kv_count
//   kv[]        : string key, u32 value type, value (arrays: u32 elem type, u64 n, elems)
//   tensor info : string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset
//   padding     : up to the next multiple of `general.alignment` (default 32)
//   data        : tensor i lives at data_start + offset_i
// where string = u64 length + bytes (no terminator). Nothing read from the file is used before
// it is checked against the bytes actually present.
#include "fasa/io/gguf.h"

#include <cmath>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_set>

#include "fasa/core/error.h"
#include "fasa/io/mmap_file.h"

namespace fasa {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes little-endian");

namespace {

constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kMaxAlignment = uint64_t{1} << 31;
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                  // empty key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, 1 dim, type, offset

bool is_int_type(GgufType t) {
  switch (t) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::UINT16:
    case GgufType::INT16:
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::UINT64:
    case GgufType::INT64: return true;
    default: return false;
  }
}

bool is_float_type(GgufType t) { return t == GgufType::FLOAT32 || t == GgufType::FLOAT64; }

// Smallest encoded size of one value of type t (strings: the u64 length alone).
uint64_t min_value_bytes(GgufType t) {
  switch (t) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::BOOL: return 1;
    case GgufType::UINT16:
    case GgufType::INT16: return 2;
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::FLOAT32: return 4;
    case GgufType::ARRAY: return 4 + 8;
    default: return 8;  // UINT64, INT64, FLOAT64, STRING
  }
}

std::string type_desc(const GgufValue& v) {
  if (v.type != GgufType::ARRAY) return std::string(gguf_type_name(v.type));
  return fmt::format("ARRAY of {}", gguf_type_name(v.elem_type));
}

// Bounds-checked little-endian cursor over the mapping. `ctx_` names what is being parsed
// ("key 'x'", "tensor 'y'", "header") so that errors say where they happened.
class Cursor {
 public:
  Cursor(const std::string& path, const uint8_t* base, uint64_t size)
      : path_(path), base_(base), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  void set_ctx(std::string ctx) { ctx_ = std::move(ctx); }
  const std::string& ctx() const { return ctx_; }

  void need(uint64_t n, const char* what) const {
    if (n > remaining()) {
      fail("{}: truncated file: {} of {} needs {} bytes at offset {}, but the file has {} bytes",
           path_, what, ctx_, n, pos_, size_);
    }
  }

  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const char* what) {
    const uint64_t len = read<uint64_t>(what);
    if (len > remaining()) {
      fail("{}: {} of {} at offset {} has length {}, which extends past end of file ({} bytes)",
           path_, what, ctx_, pos_ - 8, len, size_);
    }
    std::string s(reinterpret_cast<const char*>(base_ + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }

 private:
  const std::string& path_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::string ctx_ = "header";
};

GgufType read_type(Cursor& cur, const std::string& path, const char* what) {
  const uint32_t t = cur.read<uint32_t>(what);
  if (t > static_cast<uint32_t>(GgufType::FLOAT64)) {
    fail("{}: {} has unknown value type {} (valid: 0..12)", path, cur.ctx(), t);
  }
  return static_cast<GgufType>(t);
}

GgufScalar read_scalar(Cursor& cur, const std::string& path, GgufType t) {
  switch (t) {
    case GgufType::UINT8: return uint64_t{cur.read<uint8_t>("UINT8 value")};
    case GgufType::INT8: return int64_t{cur.read<int8_t>("INT8 value")};
    case GgufType::UINT16: return uint64_t{cur.read<uint16_t>("UINT16 value")};
    case GgufType::INT16: return int64_t{cur.read<int16_t>("INT16 value")};
    case GgufType::UINT32: return uint64_t{cur.read<uint32_t>("UINT32 value")};
    case GgufType::INT32: return int64_t{cur.read<int32_t>("INT32 value")};
    case GgufType::UINT64: return cur.read<uint64_t>("UINT64 value");
    case GgufType::INT64: return cur.read<int64_t>("INT64 value");
    case GgufType::FLOAT32: return double{cur.read<float>("FLOAT32 value")};
    case GgufType::FLOAT64: return cur.read<double>("FLOAT64 value");
    case GgufType::BOOL: {
      const uint8_t b = cur.read<uint8_t>("BOOL value");
      if (b > 1) fail("{}: {} has invalid BOOL value {} (expected 0 or 1)", path, cur.ctx(), b);
      return b == 1;
    }
    case GgufType::STRING: return cur.read_string("string value");
    case GgufType::ARRAY: break;
  }
  fail("{}: {} has a nested array (arrays of arrays are not supported)", path, cur.ctx());
}

GgufValue read_value(Cursor& cur, const std::string& path) {
  GgufValue v;
  v.type = read_type(cur, path, "value type");
  if (v.type != GgufType::ARRAY) {
    v.scalar = read_scalar(cur, path, v.type);
    return v;
  }
  v.elem_type = read_type(cur, path, "array element type");
  if (v.elem_type == GgufType::ARRAY) {
    fail("{}: {} is an array of arrays (nested arrays are not supported)", path, cur.ctx());
  }
  const uint64_t n = cur.read<uint64_t>("array length");
  if (n > cur.remaining() / min_value_bytes(v.elem_type)) {
    fail("{}: {} array of {} {} elements extends past end of file ({} bytes left at offset {})",
         path, cur.ctx(), n, gguf_type_name(v.elem_type), cur.remaining(), cur.pos());
  }
  v.array.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) v.array.push_back(read_scalar(cur, path, v.elem_type));
  return v;
}

uint64_t align_up(uint64_t x, uint64_t alignment) {
  return (x + alignment - 1) / alignment * alignment;  // x <= file size, alignment <= 2^31
}

// Integer metadata as int64, range-checked. `what` names the key for errors.
int64_t scalar_to_int(const GgufScalar& s, const std::string& path, std::string_view key) {
  if (const auto* u = std::get_if<uint64_t>(&s)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail("{}: key '{}' value {} is out of range for int64", path, key, *u);
    }
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&s)) return *i;
  fail("{}: key '{}' does not hold an integer", path, key);
}

double scalar_to_double(const GgufScalar& s) {
  if (const auto* d = std::get_if<double>(&s)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&s)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&s)) return static_cast<double>(*i);
  return 0.0;  // callers check the type first
}

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::UINT8: return "UINT8";
    case GgufType::INT8: return "INT8";
    case GgufType::UINT16: return "UINT16";
    case GgufType::INT16: return "INT16";
    case GgufType::UINT32: return "UINT32";
    case GgufType::INT32: return "INT32";
    case GgufType::FLOAT32: return "FLOAT32";
    case GgufType::BOOL: return "BOOL";
    case GgufType::STRING: return "STRING";
    case GgufType::ARRAY: return "ARRAY";
    case GgufType::UINT64: return "UINT64";
    case GgufType::INT64: return "INT64";
    case GgufType::FLOAT64: return "FLOAT64";
  }
  return "UNKNOWN";
}

struct GgufFile::Mapping {
  explicit Mapping(const std::string& path) : file(path) {}
  MmapFile file;
};

GgufFile::~GgufFile() = default;

namespace {

struct Header {
  uint32_t version = 0;
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
};

// Magic, version and counts; counts that cannot fit in the rest of the file fail here.
Header read_header(Cursor& cur, const std::string& path, const uint8_t* base, uint64_t size) {
  if (size < 4 || std::memcmp(base, "GGUF", 4) != 0) {
    fail("'{}' is not a GGUF file (bad magic)", path);
  }
  cur.read<uint32_t>("magic");
  Header h;
  h.version = cur.read<uint32_t>("version");
  if (h.version != 2 && h.version != 3) {
    if (h.version == 1) fail("{}: GGUF version 1 is not supported (only versions 2 and 3)", path);
    const uint32_t swapped = __builtin_bswap32(h.version);
    if (swapped == 2 || swapped == 3) {
      fail("{}: GGUF version {} looks byte-swapped: big-endian GGUF files are not supported", path,
           h.version);
    }
    fail("{}: unsupported GGUF version {} (only versions 2 and 3)", path, h.version);
  }
  h.n_tensors = cur.read<uint64_t>("tensor_count");
  h.n_kv = cur.read<uint64_t>("kv_count");
  if (h.n_kv > cur.remaining() / kMinKvBytes) {
    fail("{}: kv_count {} cannot fit in the {} bytes left after the header", path, h.n_kv,
         cur.remaining());
  }
  if (h.n_tensors > cur.remaining() / kMinTensorInfoBytes) {
    fail("{}: tensor_count {} cannot fit in the {} bytes left after the header", path, h.n_tensors,
         cur.remaining());
  }
  return h;
}

// The key/value pairs, in file order; keys are non-empty and unique.
std::vector<GgufKV> read_metadata(Cursor& cur, const std::string& path, uint64_t n_kv) {
  std::vector<GgufKV> kvs;
  kvs.reserve(static_cast<size_t>(n_kv));
  std::unordered_set<std::string> seen_keys;
  for (uint64_t i = 0; i < n_kv; ++i) {
    cur.set_ctx(fmt::format("metadata entry {}", i));
    GgufKV kv;
    kv.key = cur.read_string("key");
    if (kv.key.empty()) fail("{}: metadata entry {} has an empty key", path, i);
    if (!seen_keys.insert(kv.key).second) fail("{}: duplicate key '{}'", path, kv.key);
    cur.set_ctx(fmt::format("key '{}'", kv.key));
    kv.value = read_value(cur, path);
    kvs.push_back(std::move(kv));
  }
  return kvs;
}

// general.alignment: an integer power of two up to kMaxAlignment.
uint64_t checked_alignment(const GgufValue& a, const std::string& path) {
  if (a.type == GgufType::ARRAY || !is_int_type(a.type)) {
    fail("{}: key 'general.alignment' has type {}, expected UINT32", path, type_desc(a));
  }
  const int64_t al = scalar_to_int(a.scalar, path, "general.alignment");
  if (al <= 0 || static_cast<uint64_t>(al) > kMaxAlignment || !std::has_single_bit(uint64_t(al))) {
    fail("{}: general.alignment {} is not a power of two in 1..{}", path, al, kMaxAlignment);
  }
  return static_cast<uint64_t>(al);
}

// One tensor info: a name not in seen_names (added), dims, type (whole blocks per row) and data
// offset; its byte size.
GgufTensorInfo read_tensor_info(Cursor& cur, const std::string& path,
                                std::unordered_set<std::string>& seen_names) {
  GgufTensorInfo t;
  t.name = cur.read_string("tensor name");
  if (!seen_names.insert(t.name).second) fail("{}: duplicate tensor name '{}'", path, t.name);
  cur.set_ctx(fmt::format("tensor '{}'", t.name));
  const uint32_t n_dims = cur.read<uint32_t>("n_dims");
  if (n_dims == 0 || n_dims > kMaxDims) {
    fail("{}: tensor '{}' has n_dims {}, expected 1..{}", path, t.name, n_dims, kMaxDims);
  }
  int64_t n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const int64_t ne = static_cast<int64_t>(cur.read<uint64_t>("dimension"));
    if (ne <= 0)
      fail("{}: tensor '{}' has dimension ne[{}] = {}, must be > 0", path, t.name, d, ne);
    if (__builtin_mul_overflow(n_elements, ne, &n_elements)) {
      fail("{}: tensor '{}' element count overflows int64 at ne[{}] = {}", path, t.name, d, ne);
    }
    t.ne.push_back(ne);
  }
  t.n_elements = n_elements;
  const uint32_t type = cur.read<uint32_t>("tensor type");
  const DTypeInfo* info = dtype_info(type);
  if (info == nullptr || info->engine_only) {
    fail("{}: tensor '{}' has unknown tensor type {}", path, t.name, type);
  }
  t.type = static_cast<DType>(type);
  if (t.ne[0] % info->block_elems != 0) {
    fail("{}: tensor '{}' row length ne[0] = {} is not a multiple of the {} block size {}", path,
         t.name, t.ne[0], info->name, info->block_elems);
  }
  const uint64_t n_blocks = static_cast<uint64_t>(n_elements / info->block_elems);
  if (__builtin_mul_overflow(n_blocks, static_cast<uint64_t>(info->block_bytes), &t.n_bytes)) {
    fail("{}: tensor '{}' byte size overflows ({} {} blocks)", path, t.name, n_blocks, info->name);
  }
  t.offset = cur.read<uint64_t>("data offset");
  return t;
}

// Every tensor info, names unique.
std::vector<GgufTensorInfo> read_tensor_infos(Cursor& cur, const std::string& path,
                                              uint64_t n_tensors) {
  std::vector<GgufTensorInfo> tensors;
  tensors.reserve(static_cast<size_t>(n_tensors));
  std::unordered_set<std::string> seen_names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    cur.set_ctx(fmt::format("tensor info {}", i));
    tensors.push_back(read_tensor_info(cur, path, seen_names));
  }
  return tensors;
}

// Points each tensor at its data, which must be aligned and inside the file.
void bind_tensor_data(std::vector<GgufTensorInfo>& tensors, const std::string& path,
                      const uint8_t* base, uint64_t size, uint64_t data_start, uint64_t alignment) {
  for (GgufTensorInfo& t : tensors) {
    if (t.offset % alignment != 0) {
      fail("{}: tensor '{}' data offset {} is not a multiple of the alignment {}", path, t.name,
           t.offset, alignment);
    }
    if (data_start > size || t.offset > size - data_start ||
        t.n_bytes > size - data_start - t.offset) {
      uint64_t abs_offset = 0;
      if (__builtin_add_overflow(data_start, t.offset, &abs_offset)) abs_offset = t.offset;
      fail("{}: tensor '{}' data [offset {}, {} bytes] extends past end of file ({} bytes)", path,
           t.name, abs_offset, t.n_bytes, size);
    }
    t.data = base + data_start + t.offset;
  }
}

// No two tensors' data overlap.
void check_disjoint(const std::vector<GgufTensorInfo>& tensors, const std::string& path) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& prev = tensors[order[k - 1]];
    const GgufTensorInfo& next = tensors[order[k]];
    if (prev.offset + prev.n_bytes > next.offset) {  // no overflow: both end inside the file
      fail("{}: tensors '{}' [offset {}, {} bytes] and '{}' [offset {}] have overlapping data",
           path, prev.name, prev.offset, prev.n_bytes, next.name, next.offset);
    }
  }
}

}  // namespace

std::shared_ptr<const GgufFile> GgufFile::open(const std::string& path) {
  std::shared_ptr<GgufFile> g(new GgufFile());
  g->path_ = path;
  g->map_ = std::make_unique<Mapping>(path);
  const uint8_t* base = g->map_->file.data();
  const uint64_t size = g->map_->file.size();
  g->file_bytes_ = size;
  Cursor cur(path, base, size);
  const Header h = read_header(cur, path, base, size);
  g->version_ = h.version;
  g->kvs_ = read_metadata(cur, path, h.n_kv);
  if (const GgufValue* a = g->find("general.alignment")) {
    g->alignment_ = checked_alignment(*a, path);
  }
  g->tensors_ = read_tensor_infos(cur, path, h.n_tensors);
  bind_tensor_data(g->tensors_, path, base, size, align_up(cur.pos(), g->alignment_),
                   g->alignment_);
  check_disjoint(g->tensors_, path);
  return g;
}

// ---------------------------------------------------------------------------------------------
// Lookups and typed getters.

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const GgufKV& kv : kvs_) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const GgufTensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

namespace {

const GgufValue& require(const GgufFile& f, std::string_view key) {
  const GgufValue* v = f.find(key);
  if (v == nullptr) fail("{}: required key '{}' is missing", f.path(), key);
  return *v;
}

[[noreturn]] void wrong_type(const GgufFile& f, std::string_view key, const GgufValue& v,
                             std::string_view expected) {
  fail("{}: key '{}' has type {}, expected {}", f.path(), key, type_desc(v), expected);
}

}  // namespace

std::string GgufFile::get_string(std::string_view key) const {
  const GgufValue& v = require(*this, key);
  if (v.type != GgufType::STRING) wrong_type(*this, key, v, "STRING");
  return std::get<std::string>(v.scalar);
}

std::string GgufFile::get_string_or(std::string_view key, std::string def) const {
  return find(key) ? get_string(key) : std::move(def);
}

int64_t GgufFile::get_int(std::string_view key) const {
  const GgufValue& v = require(*this, key);
  if (!is_int_type(v.type)) wrong_type(*this, key, v, "an integer");
  return scalar_to_int(v.scalar, path_, key);
}

int64_t GgufFile::get_int_or(std::string_view key, int64_t def) const {
  return find(key) ? get_int(key) : def;
}

double GgufFile::get_float(std::string_view key) const {
  const GgufValue& v = require(*this, key);
  if (!is_float_type(v.type) && !is_int_type(v.type)) wrong_type(*this, key, v, "a number");
  const double d = scalar_to_double(v.scalar);
  // Every float the engine takes from a file is finite (inf or NaN in a hyper-parameter only
  // ever makes garbage); ranges are the reader's (ModelConfig).
  if (!std::isfinite(d)) fail("{}: metadata '{}' = {} is not a finite number", path_, key, d);
  return d;
}

double GgufFile::get_float_or(std::string_view key, double def) const {
  return find(key) ? get_float(key) : def;
}

bool GgufFile::get_bool_or(std::string_view key, bool def) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return def;
  if (v->type != GgufType::BOOL) wrong_type(*this, key, *v, "BOOL");
  return std::get<bool>(v->scalar);
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue& v = require(*this, key);
  if (v.type != GgufType::ARRAY || v.elem_type != GgufType::STRING) {
    wrong_type(*this, key, v, "an array of STRING");
  }
  std::vector<std::string> out;
  out.reserve(v.array.size());
  for (const GgufScalar& s : v.array) out.push_back(std::get<std::string>(s));
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue& v = require(*this, key);
  if (v.type != GgufType::ARRAY || !is_int_type(v.elem_type)) {
    wrong_type(*this, key, v, "an array of integers");
  }
  std::vector<int64_t> out;
  out.reserve(v.array.size());
  for (const GgufScalar& s : v.array) out.push_back(scalar_to_int(s, path_, key));
  return out;
}

std::vector<float> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue& v = require(*this, key);
  if (v.type != GgufType::ARRAY || !(is_float_type(v.elem_type) || is_int_type(v.elem_type))) {
    wrong_type(*this, key, v, "an array of numbers");
  }
  std::vector<float> out;
  out.reserve(v.array.size());
  for (const GgufScalar& s : v.array) {
    const float f = static_cast<float>(scalar_to_double(s));
    if (!std::isfinite(f)) {
      fail("{}: metadata '{}'[{}] = {} is not a finite number", path_, key, out.size(), f);
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace fasa
