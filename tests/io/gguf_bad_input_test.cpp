// Malformed GGUF files: each must throw fasa::Error with a message naming the problem, never
// crash or allocate absurd amounts. Files are made by GgufWriter and then corrupted byte-wise.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"

namespace fasa {
namespace {

using Bytes = std::vector<uint8_t>;

std::string temp_path(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "fasa_" + info->test_suite_name() + "_" + info->name() + "_" + tag +
         ".gguf";
}

std::string write_temp(const Bytes& bytes, const std::string& tag = "bad") {
  const std::string path = temp_path(tag);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  EXPECT_TRUE(out.good()) << path;
  return path;
}

// Opens `bytes` as a file; returns the fasa::Error message, or "" (plus a failure) if it opened.
std::string open_error(const Bytes& bytes) {
  const std::string path = write_temp(bytes);
  try {
    GgufFile::open(path);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << "message lacks the path: " << msg;
    return msg;
  }
  ADD_FAILURE() << "expected fasa::Error, the file opened";
  return "";
}

#define EXPECT_OPEN_FAILS(bytes, phrase)                                        \
  do {                                                                          \
    EXPECT_THROW(GgufFile::open(write_temp(bytes, "throw")), ::fasa::Error);    \
    const std::string msg_ = open_error(bytes);                                 \
    EXPECT_NE(msg_.find(phrase), std::string::npos) << "message was: " << msg_; \
  } while (0)

// Offset just past the first encoded GGUF string equal to `s` (u64 length + bytes).
size_t after_string(const Bytes& b, const std::string& s) {
  Bytes pat(8 + s.size());
  const uint64_t len = s.size();
  std::memcpy(pat.data(), &len, 8);
  std::memcpy(pat.data() + 8, s.data(), s.size());
  for (size_t i = 0; i + pat.size() <= b.size(); ++i) {
    if (std::memcmp(b.data() + i, pat.data(), pat.size()) == 0) return i + pat.size();
  }
  ADD_FAILURE() << "string '" << s << "' not found";
  return 0;
}

void put_u32(Bytes& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void put_u64(Bytes& b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }

// Header: magic @0, version @4, tensor_count @8, kv_count @16, first key @24.
constexpr size_t kVersionAt = 4, kTensorCountAt = 8, kKvCountAt = 16, kFirstKeyAt = 24;
// Tensor info after its name: n_dims u32, ne[n_dims] u64, type u32, offset u64.
size_t n_dims_at(const Bytes& b, const std::string& name) { return after_string(b, name); }
size_t ne_at(const Bytes& b, const std::string& name, int d) {
  return after_string(b, name) + 4 + 8 * d;
}
size_t type_at(const Bytes& b, const std::string& name, int n_dims) {
  return ne_at(b, name, n_dims);
}
size_t offset_at(const Bytes& b, const std::string& name, int n_dims) {
  return ne_at(b, name, n_dims) + 4;
}

// Small valid file: t.a F32 [8] at offset 0, t.b F32 [4, 2] at offset 32. Both are exactly one
// alignment unit, so the file ends where t.b's data ends (every shorter prefix is invalid).
Bytes small_file(GgufWriter w = GgufWriter()) {
  w.set_string("general.architecture", "llama");
  w.set_u32("a.u32", 7);
  w.set_i32("a.i32", -7);
  w.set_i32_array("a.arr", {1, 2, 3});
  w.set_bool("a.bool", true);
  w.add_tensor_f32("t.a", {8}, std::vector<float>(8, 1.f));
  w.add_tensor_f32("t.b", {4, 2}, std::vector<float>(8, 2.f));
  return w.to_bytes();
}

TEST(GgufBadInput, SmallFileIsValid) {
  const Bytes b = small_file();
  auto f = GgufFile::open(write_temp(b));
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensors()[1].offset, 32u);
  EXPECT_EQ(f->tensors()[1].data + f->tensors()[1].n_bytes, f->tensors()[0].data + 64);
  EXPECT_EQ(f->file_bytes(), b.size());
}

TEST(GgufBadInput, TruncatedAtEveryLength) {
  const Bytes full = small_file();
  for (size_t len = 0; len < full.size(); ++len) {
    const Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
    const std::string path = write_temp(prefix);
    try {
      GgufFile::open(path);
      ADD_FAILURE() << "prefix of " << len << " bytes opened without error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(GgufFile::open(write_temp(full)));
}

TEST(GgufBadInput, TruncatedMessageNamesFieldAndOffset) {
  const Bytes full = small_file();
  const size_t n_dims_pos = n_dims_at(full, "t.b");
  const Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n_dims_pos + 2));
  EXPECT_OPEN_FAILS(cut, "truncated file: n_dims of tensor 't.b' needs 4 bytes at offset " +
                             std::to_string(n_dims_pos));
}

TEST(GgufBadInput, WrongMagic) {
  Bytes b = small_file();
  b[3] = 'X';
  EXPECT_OPEN_FAILS(b, "is not a GGUF file (bad magic)");
  EXPECT_OPEN_FAILS(Bytes{}, "is not a GGUF file");
  EXPECT_OPEN_FAILS((Bytes{'G', 'G'}), "is not a GGUF file");
}

TEST(GgufBadInput, VersionOne) {
  Bytes b = small_file();
  put_u32(b, kVersionAt, 1);
  EXPECT_OPEN_FAILS(b, "GGUF version 1 is not supported");
}

TEST(GgufBadInput, VersionNinetyNine) {
  Bytes b = small_file();
  put_u32(b, kVersionAt, 99);
  EXPECT_OPEN_FAILS(b, "unsupported GGUF version 99");
}

TEST(GgufBadInput, BigEndianVersion) {
  Bytes b = small_file();
  put_u32(b, kVersionAt, 0x03000000u);
  EXPECT_OPEN_FAILS(b, "big-endian");
}

TEST(GgufBadInput, AbsurdKvCount) {
  Bytes b = small_file();
  put_u64(b, kKvCountAt, uint64_t{1} << 60);
  EXPECT_OPEN_FAILS(b, "kv_count 1152921504606846976 cannot fit");
  put_u64(b, kKvCountAt, ~uint64_t{0});
  EXPECT_OPEN_FAILS(b, "kv_count");
}

TEST(GgufBadInput, AbsurdTensorCount) {
  Bytes b = small_file();
  put_u64(b, kTensorCountAt, uint64_t{1} << 60);
  EXPECT_OPEN_FAILS(b, "tensor_count 1152921504606846976 cannot fit");
}

TEST(GgufBadInput, AbsurdKeyLength) {
  Bytes b = small_file();
  put_u64(b, kFirstKeyAt, uint64_t{1} << 62);
  EXPECT_OPEN_FAILS(b, "extends past end of file");
  put_u64(b, kFirstKeyAt, ~uint64_t{0});
  EXPECT_OPEN_FAILS(b, "extends past end of file");
}

TEST(GgufBadInput, AbsurdStringValueLength) {
  Bytes b = small_file();
  const size_t len_at = after_string(b, "general.architecture") + 4;  // after the type
  put_u64(b, len_at, b.size());
  EXPECT_OPEN_FAILS(b, "key 'general.architecture'");
  EXPECT_OPEN_FAILS(b, "extends past end of file");
}

TEST(GgufBadInput, AbsurdArrayLength) {
  Bytes b = small_file();
  const size_t n_at = after_string(b, "a.arr") + 4 + 4;  // after type and element type
  put_u64(b, n_at, uint64_t{1} << 61);
  EXPECT_OPEN_FAILS(b, "key 'a.arr' array of 2305843009213693952 INT32 elements extends past");
}

TEST(GgufBadInput, NestedArray) {
  Bytes b = small_file();
  put_u32(b, after_string(b, "a.arr") + 4, static_cast<uint32_t>(GgufType::ARRAY));
  EXPECT_OPEN_FAILS(b, "key 'a.arr' is an array of arrays");
}

TEST(GgufBadInput, UnknownValueType) {
  Bytes b = small_file();
  put_u32(b, after_string(b, "a.u32"), 13);
  EXPECT_OPEN_FAILS(b, "key 'a.u32' has unknown value type 13");
}

TEST(GgufBadInput, InvalidBool) {
  Bytes b = small_file();
  b[after_string(b, "a.bool") + 4] = 2;
  EXPECT_OPEN_FAILS(b, "invalid BOOL value 2");
}

TEST(GgufBadInput, DuplicateKey) {
  Bytes b = small_file();
  const size_t at = after_string(b, "a.i32");
  std::memcpy(b.data() + at - 5, "a.u32", 5);
  EXPECT_OPEN_FAILS(b, "duplicate key 'a.u32'");
}

TEST(GgufBadInput, NDimsZero) {
  Bytes b = small_file();
  put_u32(b, n_dims_at(b, "t.b"), 0);
  EXPECT_OPEN_FAILS(b, "tensor 't.b' has n_dims 0");
}

TEST(GgufBadInput, NDimsNine) {
  Bytes b = small_file();
  put_u32(b, n_dims_at(b, "t.b"), 9);
  EXPECT_OPEN_FAILS(b, "tensor 't.b' has n_dims 9");
}

TEST(GgufBadInput, ZeroDimension) {
  Bytes b = small_file();
  put_u64(b, ne_at(b, "t.b", 1), 0);
  EXPECT_OPEN_FAILS(b, "tensor 't.b' has dimension ne[1] = 0");
}

TEST(GgufBadInput, NegativeDimension) {
  Bytes b = small_file();
  put_u64(b, ne_at(b, "t.b", 0), static_cast<uint64_t>(int64_t{-4}));
  EXPECT_OPEN_FAILS(b, "tensor 't.b' has dimension ne[0] = -4");
}

TEST(GgufBadInput, ElementCountOverflow) {
  Bytes b = small_file();
  put_u64(b, ne_at(b, "t.b", 0), uint64_t{1} << 40);
  put_u64(b, ne_at(b, "t.b", 1), uint64_t{1} << 40);
  EXPECT_OPEN_FAILS(b, "tensor 't.b' element count overflows");
}

TEST(GgufBadInput, ByteSizeOverflow) {
  Bytes b = small_file();  // 2^62 F32 elements fit in int64 but 2^64 bytes do not
  put_u64(b, ne_at(b, "t.b", 0), uint64_t{1} << 31);
  put_u64(b, ne_at(b, "t.b", 1), uint64_t{1} << 31);
  EXPECT_OPEN_FAILS(b, "tensor 't.b' byte size overflows");
}

TEST(GgufBadInput, UnknownTensorType) {
  Bytes b = small_file();
  put_u32(b, type_at(b, "t.b", 2), 99);
  EXPECT_OPEN_FAILS(b, "tensor 't.b' has unknown tensor type 99");
}

// The engine's own repacked layouts (kernels/repack.h) have type numbers too, never valid in a file.
TEST(GgufBadInput, EngineOnlyTensorType) {
  Bytes b = small_file();
  put_u32(b, type_at(b, "t.b", 2), static_cast<uint32_t>(DType::Q4_K_R16));
  EXPECT_OPEN_FAILS(b, "tensor 't.b' has unknown tensor type 65548");
}

TEST(GgufBadInput, RowNotMultipleOfBlock) {
  Bytes b = small_file();  // t.a has ne[0] = 8; Q8_0 blocks hold 32
  put_u32(b, type_at(b, "t.a", 1), static_cast<uint32_t>(DType::Q8_0));
  EXPECT_OPEN_FAILS(
      b, "tensor 't.a' row length ne[0] = 8 is not a multiple of the Q8_0 block size 32");
}

TEST(GgufBadInput, MisalignedOffset) {
  Bytes b = small_file();
  put_u64(b, offset_at(b, "t.b", 2), 36);
  EXPECT_OPEN_FAILS(b, "tensor 't.b' data offset 36 is not a multiple of the alignment 32");
}

TEST(GgufBadInput, DataPastEndOfFile) {
  Bytes b = small_file();
  put_u64(b, offset_at(b, "t.b", 2), 64);
  EXPECT_OPEN_FAILS(b, "tensor 't.b' data [offset");
  EXPECT_OPEN_FAILS(b,
                    "32 bytes] extends past end of file (" + std::to_string(b.size()) + " bytes)");
  put_u64(b, offset_at(b, "t.b", 2), uint64_t{1} << 63);  // would overflow data_start + offset
  EXPECT_OPEN_FAILS(b, "tensor 't.b' data [offset");
  put_u64(b, offset_at(b, "t.b", 2), ~uint64_t{31});
  EXPECT_OPEN_FAILS(b, "extends past end of file");
}

TEST(GgufBadInput, DimensionsLargerThanData) {
  Bytes b = small_file();
  put_u64(b, ne_at(b, "t.b", 1), 3);  // 48 bytes from offset 32 in a 64-byte data section
  EXPECT_OPEN_FAILS(b, "tensor 't.b' data [offset");
}

TEST(GgufBadInput, OverlappingTensors) {
  Bytes b = small_file();
  put_u64(b, offset_at(b, "t.b", 2), 0);
  EXPECT_OPEN_FAILS(b, "overlapping data");
}

TEST(GgufBadInput, DuplicateTensorName) {
  Bytes b = small_file();
  const size_t at = after_string(b, "t.b");
  std::memcpy(b.data() + at - 3, "t.a", 3);
  EXPECT_OPEN_FAILS(b, "duplicate tensor name 't.a'");
}

TEST(GgufBadInput, AlignmentZero) {
  GgufWriter w;
  w.set_u32("general.alignment", 0);
  EXPECT_OPEN_FAILS(small_file(w), "general.alignment 0 is not a power of two");
}

TEST(GgufBadInput, AlignmentNotPowerOfTwo) {
  GgufWriter w;
  w.set_u32("general.alignment", 48);
  EXPECT_OPEN_FAILS(small_file(w), "general.alignment 48 is not a power of two");
}

TEST(GgufBadInput, AlignmentWrongType) {
  GgufWriter w;
  w.set_string("general.alignment", "32");
  EXPECT_OPEN_FAILS(small_file(w), "key 'general.alignment' has type STRING, expected UINT32");
}

TEST(GgufBadInput, MissingFile) {
  const std::string path = ::testing::TempDir() + "fasa_definitely_missing.gguf";
  std::remove(path.c_str());
  try {
    GgufFile::open(path);
    ADD_FAILURE() << "missing file opened";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot open '" + path + "': No such file or directory");
  }
}

TEST(GgufBadInput, Directory) {
  const std::string dir = temp_path("dir");
  ::mkdir(dir.c_str(), 0700);
  EXPECT_THROW(GgufFile::open(dir), Error);
  try {
    GgufFile::open(dir);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cannot open '" + dir + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("directory"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fasa
