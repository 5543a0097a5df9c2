// GGUF v2/v3 reader over mmap. Every size, offset and count read from the file is validated
// (with overflow checks) before use; any problem throws fasa::Error naming the file and the field.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fasa/core/dtype.h"

namespace fasa {

// GGUF metadata value types (numbering from the GGUF spec).
enum class GgufType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
std::string_view gguf_type_name(GgufType t);

// A scalar: unsigned ints as uint64_t, signed as int64_t, floats as double.
using GgufScalar = std::variant<uint64_t, int64_t, double, bool, std::string>;

struct GgufValue {
  GgufType type = GgufType::UINT32;
  GgufType elem_type = GgufType::UINT32;  // only for ARRAY
  GgufScalar scalar;                      // when type != ARRAY
  std::vector<GgufScalar> array;          // when type == ARRAY (nested arrays are rejected)
};

struct GgufKV {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  DType type = DType::F32;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the contiguous (row) dimension
  int64_t n_elements = 0;
  uint64_t offset = 0;  // relative to the data section, as stored
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // into the mapping; valid while the GgufFile lives
};

class GgufFile {
 public:
  // Opens and fully validates `path`. Throws fasa::Error on any problem.
  static std::shared_ptr<const GgufFile> open(const std::string& path);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t file_bytes() const { return file_bytes_; }
  uint64_t alignment() const { return alignment_; }

  const std::vector<GgufKV>& metadata() const { return kvs_; }
  const GgufValue* find(std::string_view key) const;  // nullptr when absent

  // Typed getters. The *_or forms return the default when the key is absent; all throw
  // fasa::Error naming the key when present with an incompatible type or out-of-range value.
  std::string get_string(std::string_view key) const;
  std::string get_string_or(std::string_view key, std::string def) const;
  int64_t get_int(std::string_view key) const;  // any integer type, range-checked
  int64_t get_int_or(std::string_view key, int64_t def) const;
  double get_float(std::string_view key) const;  // FLOAT32/FLOAT64 (or any integer)
  double get_float_or(std::string_view key, double def) const;
  bool get_bool_or(std::string_view key, bool def) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;
  std::vector<float> get_float_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;  // nullptr when absent

 private:
  GgufFile() = default;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t file_bytes_ = 0;
  uint64_t alignment_ = 32;
  std::vector<GgufKV> kvs_;
  std::vector<GgufTensorInfo> tensors_;
  struct Mapping;
  std::unique_ptr<Mapping> map_;
};

// Builds GGUF files (tests' tiny models and malformed files, `fasa synth`'s paper-shaped ones).
// A tensor's bytes are given whole (add_tensor) or made at write time by a callback, row range
// by row range (add_tensor_rows): write() streams those to the file in pieces, so a file larger
// than memory can be written.
class GgufWriter {
 public:
  // Fills rows [first_row, first_row + n_rows) of a tensor's data (a row: ne[0] elements) into
  // `out` (n_rows * row bytes). Called in row order with pieces of any size; it must give the
  // same bytes whatever the pieces.
  using RowFill = std::function<void(int64_t first_row, int64_t n_rows, uint8_t* out)>;
  // (bytes written, bytes of the whole file), after each piece.
  using Progress = std::function<void(uint64_t done, uint64_t total)>;

  explicit GgufWriter(uint32_t version = 3, uint64_t alignment = 32);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_string(const std::string& key, const std::string& v);
  void set_string_array(const std::string& key, const std::vector<std::string>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_value(const std::string& key, const GgufValue& v);  // any type, incl. arrays
  // `data` must hold exactly the bytes of a tensor of `type` and shape `ne` (ggml order).
  void add_tensor(const std::string& name, DType type, const std::vector<int64_t>& ne,
                  const void* data, size_t n_bytes);
  void add_tensor_f32(const std::string& name, const std::vector<int64_t>& ne,
                      const std::vector<float>& values);
  // A tensor whose bytes `fill` makes at write time (same checks as add_tensor).
  void add_tensor_rows(const std::string& name, DType type, const std::vector<int64_t>& ne,
                       RowFill fill);
  // The most bytes of a streamed tensor made and written at once (default 32 MiB; >= one row).
  void set_piece_bytes(size_t n);
  uint64_t file_bytes() const;  // what write() writes: header, metadata, infos, padded data
  std::vector<uint8_t> to_bytes() const;  // the whole file in memory (same bytes as write)
  // Crash-safe (temporary file, fsync, rename); throws fasa::Error on I/O failure (the target
  // is then untouched and the temporary file removed).
  void write(const std::string& path, const Progress& progress = nullptr) const;

 private:
  struct PendingTensor {
    std::string name;
    DType type;
    std::vector<int64_t> ne;
    uint64_t n_bytes = 0;
    int64_t n_rows = 0;
    std::vector<uint8_t> bytes;  // given whole, or
    RowFill fill;                // made at write time
  };
  PendingTensor checked_tensor(const std::string& name, DType type,
                               const std::vector<int64_t>& ne) const;
  std::vector<uint8_t> header_bytes() const;  // everything before the first tensor's data
  // Calls sink(bytes) for the tensor's data in pieces (no padding).
  void emit_tensor(const PendingTensor& t,
                   const std::function<void(const uint8_t*, size_t)>& sink) const;

  uint32_t version_;
  uint64_t alignment_;
  size_t piece_bytes_ = size_t{32} << 20;
  std::vector<GgufKV> kvs_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace fasa
