// io/json_read.h: every bad field is one fasa::Error naming the file, the field and the range.
#include <gtest/gtest.h>

#include <limits>

#include "fasa/io/json_read.h"
#include "support/expect_error.h"

namespace fasa {
namespace {

using test::expect_error;
using Json = nlohmann::json;

JsonObject<Json> obj(const Json& j) { return JsonObject<Json>(j, "f.json"); }

TEST(JsonRead, NumbersAreRangeChecked) {
  const Json j = Json::parse(
      R"({"k": 8, "big": 3e9, "neg": -1, "half": 2.5, "s": "x", "huge": 18446744073709551615,
          "m": {"n": 4097}, "f": 1e39, "d": 0.25})");
  EXPECT_EQ(obj(j).number<int>("k", 0, 100), 8);
  expect_error([&] { obj(j).number<int>("big", 0, 1 << 30); },
               "f.json: field \"big\" must be an integer in [0, 1073741824] (got 3000000000.0)");
  expect_error([&] { obj(j).number<uint64_t>("neg", 0, 10); },
               "f.json: field \"neg\" must be an integer in [0, 10] (got -1)");
  expect_error([&] { obj(j).number<int>("half", 0, 10); }, "field \"half\" must be an integer");
  expect_error([&] { obj(j).number<int>("s", 0, 10); },
               "field \"s\" must be an integer in [0, 10] "
               "(got \"x\")");
  expect_error([&] { obj(j).number<int64_t>("huge", 0, INT64_MAX); }, "field \"huge\"");
  EXPECT_EQ(obj(j).number<uint64_t>("huge", 0, UINT64_MAX), UINT64_MAX);
  expect_error([&] { obj(j).number<int>("nope", 0, 1); }, "f.json: missing field \"nope\"");
  expect_error([&] { obj(j).object("m").number<int>("n", 1, 4096); },
               "f.json: field \"m.n\" must be an integer in [1, 4096] (got 4097)");
  // floats: finite, within the type and the range
  expect_error([&] { obj(j).number<float>("f", 0.0f, std::numeric_limits<float>::max()); },
               "field \"f\" must be a number");
  EXPECT_EQ(obj(j).number<double>("d", 0.0, 1.0), 0.25);
  expect_error([&] { obj(j).number<double>("k", 0.0, 1.0); }, "field \"k\" must be a number in");
  expect_error([&] { obj(j).number<double>("s", 0.0, 1.0); }, "(got \"x\")");
}

TEST(JsonRead, TypesArraysAndObjects) {
  const Json j = Json::parse(R"({"s": "x", "n": 1, "a": [1, 2, -3], "o": [{"x": 1}, 5]})");
  EXPECT_EQ(obj(j).string("s"), "x");
  expect_error([&] { obj(j).string("n"); }, "f.json: field \"n\" must be a string (got 1)");
  expect_error([&] { obj(j).boolean("n"); }, "field \"n\" must be true or false");
  expect_error([&] { obj(j).array("s"); }, "field \"s\" must be an array");
  expect_error([&] { obj(j).array("a", 2); }, "field \"a\" has 3 elements, expected 2");
  expect_error([&] { obj(j).numbers<int>("a", 0, 5); },
               "field \"a[2]\" must be an integer in [0, 5] (got -3)");
  EXPECT_EQ(obj(j).element("o", 0).number<int>("x", 0, 1), 1);
  expect_error([&] { obj(j).element("o", 1); }, "field \"o[1]\" must be an object (got 5)");
  expect_error([&] { obj(j).object("s"); }, "field \"s\" must be an object");
  expect_error([] { JsonObject<Json>(Json::array(), "top.json"); },
               "top.json: expected a JSON object");
}

TEST(JsonRead, ParseErrorsNameTheFileWithoutTheLibraryPrefix) {
  try {
    json_parse<Json>("{\"k\": 1,", "cut.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("cut.json: not valid JSON (", 0), 0u) << m;
    EXPECT_EQ(m.find("[json.exception"), std::string::npos) << m;
  }
  expect_error([] { json_parse<nlohmann::ordered_json>("", "empty.jsonl:1"); },
               "empty.jsonl:1: not valid JSON");
  expect_error([] { json_parse<Json>("\"\xff\"", "bytes.json"); }, "bytes.json: not valid JSON");
}

}  // namespace
}  // namespace fasa
