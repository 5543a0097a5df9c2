// GGUF writer -> reader round trips: every metadata type, arrays, tensor layout and the typed
// getters. Malformed inputs are covered in gguf_bad_input_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"

namespace fasa {
namespace {

// A per-test file under the gtest temp dir (tests may run in parallel processes).
std::string temp_path(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "fasa_" + info->test_suite_name() + "_" + info->name() + "_" + tag +
         ".gguf";
}

std::shared_ptr<const GgufFile> write_and_open(const GgufWriter& w, const std::string& tag = "f") {
  const std::string path = temp_path(tag);
  w.write(path);
  return GgufFile::open(path);
}

// The message of the fasa::Error thrown by f; records a failure when nothing is thrown.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected fasa::Error, nothing was thrown";
  return "";
}

#define EXPECT_ERROR_HAS(expr, phrase)                                          \
  do {                                                                          \
    EXPECT_THROW((void)(expr), ::fasa::Error);                                  \
    const std::string msg_ = error_of([&] { (void)(expr); });                   \
    EXPECT_NE(msg_.find(phrase), std::string::npos) << "message was: " << msg_; \
  } while (0)

std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 7);
  return b;
}

GgufValue scalar(GgufType t, GgufScalar s) {
  GgufValue v;
  v.type = t;
  v.scalar = std::move(s);
  return v;
}

GgufValue array(GgufType elem, std::vector<GgufScalar> items) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.elem_type = elem;
  v.array = std::move(items);
  return v;
}

bool same_value(const GgufValue& a, const GgufValue& b) {
  if (a.type != b.type) return false;
  if (a.type != GgufType::ARRAY) return a.scalar == b.scalar;
  return a.elem_type == b.elem_type && a.array == b.array;
}

TEST(GgufTest, RoundTripsEveryMetadataType) {
  const std::vector<std::pair<std::string, GgufValue>> values = {
      {"t.u8", scalar(GgufType::UINT8, uint64_t{255})},
      {"t.i8", scalar(GgufType::INT8, int64_t{-128})},
      {"t.u16", scalar(GgufType::UINT16, uint64_t{65535})},
      {"t.i16", scalar(GgufType::INT16, int64_t{-32768})},
      {"t.u32", scalar(GgufType::UINT32, uint64_t{4000000000u})},
      {"t.i32", scalar(GgufType::INT32, int64_t{std::numeric_limits<int32_t>::min()})},
      {"t.f32", scalar(GgufType::FLOAT32, double{1.5f})},
      {"t.bool", scalar(GgufType::BOOL, true)},
      {"t.bool0", scalar(GgufType::BOOL, false)},
      {"t.str", scalar(GgufType::STRING, std::string("h\xC3\xA9llo\0x", 8))},
      {"t.empty_str", scalar(GgufType::STRING, std::string())},
      {"t.u64", scalar(GgufType::UINT64, std::numeric_limits<uint64_t>::max())},
      {"t.i64", scalar(GgufType::INT64, std::numeric_limits<int64_t>::min())},
      {"t.f64", scalar(GgufType::FLOAT64, 3.141592653589793)},
      {"a.u8", array(GgufType::UINT8, {uint64_t{0}, uint64_t{200}})},
      {"a.i8", array(GgufType::INT8, {int64_t{-1}, int64_t{127}})},
      {"a.u16", array(GgufType::UINT16, {uint64_t{1}})},
      {"a.i16", array(GgufType::INT16, {int64_t{-300}, int64_t{300}})},
      {"a.u32", array(GgufType::UINT32, {uint64_t{7}, uint64_t{8}, uint64_t{9}})},
      {"a.i32", array(GgufType::INT32, {int64_t{-7}})},
      {"a.f32", array(GgufType::FLOAT32, {double{0.25f}, double{-2.0f}})},
      {"a.bool", array(GgufType::BOOL, {true, false, true})},
      {"a.str", array(GgufType::STRING, {std::string("a"), std::string(), std::string("ccc")})},
      {"a.u64", array(GgufType::UINT64, {uint64_t{1} << 40})},
      {"a.i64", array(GgufType::INT64, {int64_t{-(int64_t{1} << 40)}})},
      {"a.f64", array(GgufType::FLOAT64, {1e300, -1e-300})},
      {"a.empty", array(GgufType::UINT32, {})},
  };
  GgufWriter w;
  for (const auto& [key, v] : values) w.set_value(key, v);
  auto f = write_and_open(w);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_TRUE(f->tensors().empty());
  ASSERT_EQ(f->metadata().size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(f->metadata()[i].key, values[i].first);  // file order is kept
    const GgufValue* got = f->find(values[i].first);
    ASSERT_NE(got, nullptr) << values[i].first;
    EXPECT_TRUE(same_value(*got, values[i].second)) << values[i].first;
  }
  EXPECT_EQ(f->find("absent"), nullptr);
}

TEST(GgufTest, ConvenienceSettersAndGetters) {
  GgufWriter w;
  w.set_u32("k.u32", 30);
  w.set_i32("k.i32", -4);
  w.set_u64("k.u64", uint64_t{1} << 40);
  w.set_u64("k.huge", std::numeric_limits<uint64_t>::max());
  w.set_f32("k.f32", 1e-5f);
  w.set_bool("k.bool", true);
  w.set_string("k.str", "llama");
  w.set_string_array("k.strs", {"<s>", "</s>", "x"});
  w.set_i32_array("k.ints", {3, -1, 2});
  w.set_f32_array("k.floats", {0.5f, -1.25f});
  w.set_u32("k.replaced", 1);
  w.set_u32("k.replaced", 2);  // a second set replaces, it does not duplicate
  auto f = write_and_open(w);

  EXPECT_EQ(f->get_int("k.u32"), 30);
  EXPECT_EQ(f->get_int("k.i32"), -4);
  EXPECT_EQ(f->get_int("k.u64"), int64_t{1} << 40);
  EXPECT_EQ(f->get_int("k.replaced"), 2);
  EXPECT_EQ(f->get_int_or("k.absent", 17), 17);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("k.f32")), 1e-5f);
  EXPECT_DOUBLE_EQ(f->get_float("k.u32"), 30.0);  // integers are accepted as floats
  EXPECT_DOUBLE_EQ(f->get_float_or("k.absent", 0.5), 0.5);
  EXPECT_TRUE(f->get_bool_or("k.bool", false));
  EXPECT_FALSE(f->get_bool_or("k.absent", false));
  EXPECT_EQ(f->get_string("k.str"), "llama");
  EXPECT_EQ(f->get_string_or("k.absent", "dflt"), "dflt");
  EXPECT_EQ(f->get_string_array("k.strs"), (std::vector<std::string>{"<s>", "</s>", "x"}));
  EXPECT_EQ(f->get_int_array("k.ints"), (std::vector<int64_t>{3, -1, 2}));
  EXPECT_EQ(f->get_float_array("k.floats"), (std::vector<float>{0.5f, -1.25f}));
  EXPECT_EQ(f->get_float_array("k.ints"), (std::vector<float>{3.f, -1.f, 2.f}));
  size_t n_replaced = 0;
  for (const GgufKV& kv : f->metadata()) n_replaced += kv.key == "k.replaced";
  EXPECT_EQ(n_replaced, 1u);

  // Typed errors name the key, the actual and the expected type.
  EXPECT_ERROR_HAS(f->get_int("k.str"), "key 'k.str' has type STRING, expected an integer");
  EXPECT_ERROR_HAS(f->get_int_or("k.str", 0), "expected an integer");
  EXPECT_ERROR_HAS(f->get_int("k.bool"), "has type BOOL, expected an integer");
  EXPECT_ERROR_HAS(f->get_int("k.huge"), "key 'k.huge' value 18446744073709551615 is out of range");
  EXPECT_ERROR_HAS(f->get_float("k.str"), "key 'k.str' has type STRING");
  EXPECT_ERROR_HAS(f->get_string("k.u32"), "key 'k.u32' has type UINT32, expected STRING");
  EXPECT_ERROR_HAS(f->get_bool_or("k.u32", true), "expected BOOL");
  EXPECT_ERROR_HAS(f->get_string_array("k.ints"),
                   "has type ARRAY of INT32, expected an array of STRING");
  EXPECT_ERROR_HAS(f->get_int_array("k.strs"), "expected an array of integers");
  EXPECT_ERROR_HAS(f->get_float_array("k.str"), "expected an array of numbers");
  EXPECT_ERROR_HAS(f->get_int("k.absent"), "key 'k.absent' is missing");
  EXPECT_ERROR_HAS(f->get_string("k.absent"), f->path());
}

struct TensorCase {
  std::string name;
  DType type;
  std::vector<int64_t> ne;
  size_t n_bytes;
};

void check_tensors(const GgufFile& f, const std::vector<TensorCase>& cases) {
  ASSERT_EQ(f.tensors().size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const TensorCase& c = cases[i];
    const GgufTensorInfo* t = f.find_tensor(c.name);
    ASSERT_NE(t, nullptr) << c.name;
    EXPECT_EQ(t, &f.tensors()[i]);
    EXPECT_EQ(t->type, c.type);
    EXPECT_EQ(t->ne, c.ne);
    const int64_t n_el = std::accumulate(c.ne.begin(), c.ne.end(), int64_t{1}, std::multiplies<>());
    EXPECT_EQ(t->n_elements, n_el);
    EXPECT_EQ(t->n_bytes, c.n_bytes) << c.name;
    EXPECT_EQ(t->offset % f.alignment(), 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % f.alignment(), 0u) << c.name;
    const std::vector<uint8_t> want = pattern_bytes(c.n_bytes, static_cast<uint8_t>(i));
    EXPECT_EQ(std::memcmp(t->data, want.data(), c.n_bytes), 0) << c.name;
  }
  EXPECT_EQ(f.find_tensor("nope"), nullptr);
}

std::vector<TensorCase> tensor_cases() {
  return {
      {"tok_embd.q8_0", DType::Q8_0, {64, 5}, 2 * 5 * 34},
      {"norm.f32", DType::F32, {7}, 7 * 4},
      {"ffn.q4_1", DType::Q4_1, {96, 3}, 3 * 3 * 20},
      {"out.q6_k", DType::Q6_K, {512, 2}, 2 * 2 * 210},
      {"f16.4d", DType::F16, {3, 2, 2, 2}, 24 * 2},
      {"q4_0", DType::Q4_0, {32}, 18},
      {"bf16", DType::BF16, {5, 1}, 10},
  };
}

GgufWriter writer_with_tensors(uint32_t version, uint64_t alignment) {
  GgufWriter w(version, alignment);
  w.set_string("general.architecture", "llama");
  const auto cases = tensor_cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto bytes = pattern_bytes(cases[i].n_bytes, static_cast<uint8_t>(i));
    w.add_tensor(cases[i].name, cases[i].type, cases[i].ne, bytes.data(), bytes.size());
  }
  return w;
}

TEST(GgufTest, TensorDataPointersAndSizes) {
  auto f = write_and_open(writer_with_tensors(3, 32));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  check_tensors(*f, tensor_cases());
  EXPECT_EQ(f->file_bytes() % 32, 0u);
}

TEST(GgufTest, CustomAlignmentIsWrittenAndHonoured) {
  auto f = write_and_open(writer_with_tensors(3, 256));
  EXPECT_EQ(f->alignment(), 256u);
  EXPECT_EQ(f->get_int("general.alignment"), 256);
  check_tensors(*f, tensor_cases());
}

TEST(GgufTest, VersionTwoIsReadable) {
  auto f = write_and_open(writer_with_tensors(2, 32));
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  check_tensors(*f, tensor_cases());
}

TEST(GgufTest, FloatTensorValuesRoundTrip) {
  GgufWriter w;
  const std::vector<float> v = {1.f, -2.5f, 3.25f, 0.f, 1e-8f, -7.f};
  w.add_tensor_f32("w", {3, 2}, v);
  auto f = write_and_open(w);
  const GgufTensorInfo* t = f->find_tensor("w");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->n_bytes, v.size() * 4);
  std::vector<float> got(v.size());
  std::memcpy(got.data(), t->data, t->n_bytes);
  EXPECT_EQ(got, v);
}

TEST(GgufTest, UndequantizableTypesAreStillRead) {
  GgufWriter w;
  const auto q8k = pattern_bytes(2 * 292, 0);
  const auto i32 = pattern_bytes(3 * 4, 1);
  w.add_tensor("k.q8_k", DType::Q8_K, {512}, q8k.data(), q8k.size());
  w.add_tensor("k.i32", DType::I32, {3}, i32.data(), i32.size());
  auto f = write_and_open(w);
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensors()[0].type, DType::Q8_K);
  EXPECT_FALSE(dtype_info(f->tensors()[0].type).supported);
  EXPECT_EQ(f->tensors()[0].n_bytes, 584u);
  EXPECT_EQ(f->tensors()[1].type, DType::I32);
}

TEST(GgufTest, WriterBytesMatchWrittenFile) {
  const GgufWriter w = writer_with_tensors(3, 32);
  const std::string path = temp_path("f");
  w.write(path);
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)), {});
  const std::vector<uint8_t> bytes = w.to_bytes();
  EXPECT_EQ(on_disk, bytes);
  ASSERT_GE(bytes.size(), 24u);
  EXPECT_EQ(std::memcmp(bytes.data(), "GGUF", 4), 0);
  EXPECT_EQ(bytes[4], 3);
}

TEST(GgufTest, WriterRejectsInconsistentTensors) {
  GgufWriter w;
  const auto b = pattern_bytes(64, 0);
  EXPECT_ERROR_HAS(w.add_tensor("x", DType::F32, {8}, b.data(), 30), "needs 32");
  EXPECT_ERROR_HAS(w.add_tensor("x", DType::Q8_0, {16}, b.data(), 17), "not a multiple");
  EXPECT_ERROR_HAS(w.add_tensor("x", DType::F32, {0}, b.data(), 0), "bad dimension");
  EXPECT_ERROR_HAS(w.add_tensor("x", DType::F32, {}, b.data(), 0), "dims");
  w.add_tensor("x", DType::F32, {16}, b.data(), 64);
  EXPECT_ERROR_HAS(w.add_tensor("x", DType::F32, {16}, b.data(), 64), "duplicate tensor 'x'");
  EXPECT_ERROR_HAS(w.set_value("k", scalar(GgufType::UINT32, std::string("no"))), "does not hold");
  EXPECT_ERROR_HAS(GgufWriter(1), "version 1");
  EXPECT_ERROR_HAS(GgufWriter(3, 24), "alignment 24");
}

TEST(GgufTest, WriteToBadPathFails) {
  GgufWriter w;
  EXPECT_ERROR_HAS(w.write(::testing::TempDir() + "no_such_dir_fasa/x.gguf"), "does not exist");
}

}  // namespace
}  // namespace fasa
