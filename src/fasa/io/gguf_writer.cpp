// GGUF writer: header, metadata, tensor infos, then each tensor's data. Layout matches the
// reader in gguf.cpp; every tensor's data starts on an `alignment` boundary and is followed by
// zero padding up to the next one. write() streams: only the header and one piece of one
// tensor are in memory at a time (plus the bytes of tensors given whole).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "fasa/core/error.h"
#include "fasa/io/atomic_file.h"
#include "fasa/io/gguf.h"

namespace fasa {

namespace {

constexpr uint64_t kDefaultAlignment = 32;

uint64_t align_up(uint64_t x, uint64_t alignment) {
  return (x + alignment - 1) / alignment * alignment;
}

class ByteSink {
 public:
  std::vector<uint8_t> bytes;

  template <typename T>
  void put(T v) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void pad_to(uint64_t alignment) { bytes.resize(align_up(bytes.size(), alignment), 0); }
};

// Checks that a scalar's variant alternative matches its declared GGUF type.
bool scalar_matches(GgufType t, const GgufScalar& s) {
  switch (t) {
    case GgufType::UINT8:
    case GgufType::UINT16:
    case GgufType::UINT32:
    case GgufType::UINT64: return std::holds_alternative<uint64_t>(s);
    case GgufType::INT8:
    case GgufType::INT16:
    case GgufType::INT32:
    case GgufType::INT64: return std::holds_alternative<int64_t>(s);
    case GgufType::FLOAT32:
    case GgufType::FLOAT64: return std::holds_alternative<double>(s);
    case GgufType::BOOL: return std::holds_alternative<bool>(s);
    case GgufType::STRING: return std::holds_alternative<std::string>(s);
    case GgufType::ARRAY: return false;
  }
  return false;
}

void put_scalar(ByteSink& out, GgufType t, const GgufScalar& s) {
  switch (t) {
    case GgufType::UINT8: out.put(static_cast<uint8_t>(std::get<uint64_t>(s))); break;
    case GgufType::INT8: out.put(static_cast<int8_t>(std::get<int64_t>(s))); break;
    case GgufType::UINT16: out.put(static_cast<uint16_t>(std::get<uint64_t>(s))); break;
    case GgufType::INT16: out.put(static_cast<int16_t>(std::get<int64_t>(s))); break;
    case GgufType::UINT32: out.put(static_cast<uint32_t>(std::get<uint64_t>(s))); break;
    case GgufType::INT32: out.put(static_cast<int32_t>(std::get<int64_t>(s))); break;
    case GgufType::UINT64: out.put(std::get<uint64_t>(s)); break;
    case GgufType::INT64: out.put(std::get<int64_t>(s)); break;
    case GgufType::FLOAT32: out.put(static_cast<float>(std::get<double>(s))); break;
    case GgufType::FLOAT64: out.put(std::get<double>(s)); break;
    case GgufType::BOOL: out.put(static_cast<uint8_t>(std::get<bool>(s) ? 1 : 0)); break;
    case GgufType::STRING: out.put_string(std::get<std::string>(s)); break;
    case GgufType::ARRAY: FASA_CHECK(false && "nested arrays are rejected by set_value"); break;
  }
}

GgufValue scalar_value(GgufType t, GgufScalar s) {
  GgufValue v;
  v.type = t;
  v.scalar = std::move(s);
  return v;
}

GgufValue array_value(GgufType elem, std::vector<GgufScalar> items) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.elem_type = elem;
  v.array = std::move(items);
  return v;
}

}  // namespace

GgufWriter::GgufWriter(uint32_t version, uint64_t alignment)
    : version_(version), alignment_(alignment) {
  if (version != 2 && version != 3) fail("GgufWriter: version {} not supported (2 or 3)", version);
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > (uint64_t{1} << 31)) {
    fail("GgufWriter: alignment {} is not a power of two in 1..2^31", alignment);
  }
  if (alignment != kDefaultAlignment)
    set_u32("general.alignment", static_cast<uint32_t>(alignment));
}

void GgufWriter::set_value(const std::string& key, const GgufValue& v) {
  if (v.type == GgufType::ARRAY) {
    if (v.elem_type == GgufType::ARRAY) fail("GgufWriter: key '{}': nested arrays", key);
    for (const GgufScalar& s : v.array) {
      if (!scalar_matches(v.elem_type, s)) {
        fail("GgufWriter: key '{}': array element does not hold a {}", key,
             gguf_type_name(v.elem_type));
      }
    }
  } else if (!scalar_matches(v.type, v.scalar)) {
    fail("GgufWriter: key '{}': value does not hold a {}", key, gguf_type_name(v.type));
  }
  for (GgufKV& kv : kvs_) {
    if (kv.key == key) {  // setting a key twice replaces its value
      kv.value = v;
      return;
    }
  }
  kvs_.push_back(GgufKV{key, v});
}

void GgufWriter::set_u32(const std::string& key, uint32_t v) {
  set_value(key, scalar_value(GgufType::UINT32, uint64_t{v}));
}
void GgufWriter::set_i32(const std::string& key, int32_t v) {
  set_value(key, scalar_value(GgufType::INT32, int64_t{v}));
}
void GgufWriter::set_u64(const std::string& key, uint64_t v) {
  set_value(key, scalar_value(GgufType::UINT64, v));
}
void GgufWriter::set_f32(const std::string& key, float v) {
  set_value(key, scalar_value(GgufType::FLOAT32, double{v}));
}
void GgufWriter::set_bool(const std::string& key, bool v) {
  set_value(key, scalar_value(GgufType::BOOL, v));
}
void GgufWriter::set_string(const std::string& key, const std::string& v) {
  set_value(key, scalar_value(GgufType::STRING, v));
}

void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
  set_value(key, array_value(GgufType::STRING, std::vector<GgufScalar>(v.begin(), v.end())));
}
void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  std::vector<GgufScalar> items;
  items.reserve(v.size());
  for (int32_t x : v) items.emplace_back(int64_t{x});
  set_value(key, array_value(GgufType::INT32, std::move(items)));
}
void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  std::vector<GgufScalar> items;
  items.reserve(v.size());
  for (float x : v) items.emplace_back(double{x});
  set_value(key, array_value(GgufType::FLOAT32, std::move(items)));
}

GgufWriter::PendingTensor GgufWriter::checked_tensor(const std::string& name, DType type,
                                                     const std::vector<int64_t>& ne) const {
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) fail("GgufWriter: duplicate tensor '{}'", name);
  }
  const DTypeInfo* info = dtype_info(static_cast<uint32_t>(type));
  if (info == nullptr) fail("GgufWriter: tensor '{}': unknown type", name);
  if (ne.empty() || ne.size() > 4) fail("GgufWriter: tensor '{}': {} dims", name, ne.size());
  int64_t n_elements = 1;
  for (int64_t d : ne) {
    if (d <= 0 || __builtin_mul_overflow(n_elements, d, &n_elements)) {
      fail("GgufWriter: tensor '{}': bad dimension {}", name, d);
    }
  }
  if (ne[0] % info->block_elems != 0) {
    fail("GgufWriter: tensor '{}': ne[0] = {} is not a multiple of the {} block size {}", name,
         ne[0], info->name, info->block_elems);
  }
  PendingTensor t;
  t.name = name;
  t.type = type;
  t.ne = ne;
  t.n_bytes = static_cast<uint64_t>(n_elements / info->block_elems) *
              static_cast<uint64_t>(info->block_bytes);
  t.n_rows = n_elements / ne[0];
  return t;
}

void GgufWriter::add_tensor(const std::string& name, DType type, const std::vector<int64_t>& ne,
                            const void* data, size_t n_bytes) {
  PendingTensor t = checked_tensor(name, type, ne);
  if (t.n_bytes != n_bytes) {
    fail("GgufWriter: tensor '{}': got {} bytes, {} of this shape needs {}", name, n_bytes,
         dtype_name(type), t.n_bytes);
  }
  const auto* p = static_cast<const uint8_t*>(data);
  t.bytes.assign(p, p + n_bytes);
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor_rows(const std::string& name, DType type,
                                 const std::vector<int64_t>& ne, RowFill fill) {
  if (!fill) fail("GgufWriter: tensor '{}': no fill function", name);
  PendingTensor t = checked_tensor(name, type, ne);
  t.fill = std::move(fill);
  tensors_.push_back(std::move(t));
}

void GgufWriter::set_piece_bytes(size_t n) {
  if (n == 0) fail("GgufWriter: piece size must be > 0");
  piece_bytes_ = n;
}

void GgufWriter::add_tensor_f32(const std::string& name, const std::vector<int64_t>& ne,
                                const std::vector<float>& values) {
  add_tensor(name, DType::F32, ne, values.data(), values.size() * sizeof(float));
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
  ByteSink out;
  out.bytes.insert(out.bytes.end(), {'G', 'G', 'U', 'F'});
  out.put<uint32_t>(version_);
  out.put<uint64_t>(tensors_.size());
  out.put<uint64_t>(kvs_.size());
  for (const GgufKV& kv : kvs_) {
    out.put_string(kv.key);
    out.put<uint32_t>(static_cast<uint32_t>(kv.value.type));
    if (kv.value.type != GgufType::ARRAY) {
      put_scalar(out, kv.value.type, kv.value.scalar);
      continue;
    }
    out.put<uint32_t>(static_cast<uint32_t>(kv.value.elem_type));
    out.put<uint64_t>(kv.value.array.size());
    for (const GgufScalar& s : kv.value.array) put_scalar(out, kv.value.elem_type, s);
  }
  uint64_t offset = 0;  // relative to the data section
  for (const PendingTensor& t : tensors_) {
    out.put_string(t.name);
    out.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) out.put<uint64_t>(static_cast<uint64_t>(d));
    out.put<uint32_t>(static_cast<uint32_t>(t.type));
    out.put<uint64_t>(offset);
    offset = align_up(offset + t.n_bytes, alignment_);
  }
  out.pad_to(alignment_);
  return std::move(out.bytes);
}

uint64_t GgufWriter::file_bytes() const {
  uint64_t n = header_bytes().size();
  for (const PendingTensor& t : tensors_) n = align_up(n + t.n_bytes, alignment_);
  return n;
}

void GgufWriter::emit_tensor(const PendingTensor& t,
                             const std::function<void(const uint8_t*, size_t)>& sink) const {
  if (!t.fill) {
    sink(t.bytes.data(), t.bytes.size());
    return;
  }
  const uint64_t row_bytes = t.n_bytes / static_cast<uint64_t>(t.n_rows);
  const int64_t rows_per_piece =
      std::max<int64_t>(1, static_cast<int64_t>(piece_bytes_ / row_bytes));
  std::vector<uint8_t> piece;  // [rows of this piece, row_bytes]
  for (int64_t r = 0; r < t.n_rows; r += rows_per_piece) {
    const int64_t n = std::min(rows_per_piece, t.n_rows - r);
    piece.assign(static_cast<size_t>(n * row_bytes), 0);
    t.fill(r, n, piece.data());
    sink(piece.data(), piece.size());
  }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out = header_bytes();
  for (const PendingTensor& t : tensors_) {
    emit_tensor(t, [&](const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); });
    out.resize(align_up(out.size(), alignment_), 0);
  }
  return out;
}

// Crash-safe (temporary file, fsync, rename): a reader that has the old file mapped, another
// process included, keeps reading the old bytes instead of dying of SIGBUS on a truncated map.
void GgufWriter::write(const std::string& path, const Progress& progress) const {
  AtomicFile f(path);
  const uint64_t total = file_bytes();
  uint64_t done = 0;
  auto put = [&](const uint8_t* p, size_t n) {
    f.write(std::string_view(reinterpret_cast<const char*>(p), n));
    done += n;
    if (progress) progress(done, total);
  };
  const std::vector<uint8_t> header = header_bytes();
  put(header.data(), header.size());
  static const std::vector<uint8_t> zeros(4096, 0);
  for (const PendingTensor& t : tensors_) {
    emit_tensor(t, put);
    for (uint64_t pad = align_up(done, alignment_) - done; pad > 0;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(pad, zeros.size()));
      put(zeros.data(), n);
      pad -= n;
    }
  }
  f.commit();
}

}  // namespace fasa
