// The calibration reader (parse_calibration): every number is range-checked, every bad field is
// one error naming the file and the field, and `fasa calib show` turns it into exit 1.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "fasa/attention/calibration.h"
#include "support/cli_runner.h"
#include "support/expect_error.h"

namespace fasa {
namespace {

using Json = nlohmann::json;

// A small valid version-3 calibration: 2 layers, 4 heads (2 kv), head_dim 8.
Calibration good_calibration() {
  Calibration c;
  c.model_sha256 = std::string(64, 'a');
  c.model_name = "tiny";
  c.arch = "llama";
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.fcs = fc_dims(RopeLayout::Norm, FcLayout::Rope, c.head_dim, c.head_dim);
  c.k = 8;
  c.n_samples = 2;
  c.tokens_per_sample = 32;
  c.steps = 3;
  c.text_name = "t.txt";
  c.text_sha256 = std::string(64, 'b');
  c.text_tokens = 100;
  c.layers = {0, 1};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  c.mean_ca.resize(c.layers.size() * c.n_heads * c.n_fc());
  for (auto& x : c.mean_ca) x = u(rng);
  c.channel_importance.resize(c.layers.size() * c.n_heads * c.head_dim);
  for (auto& x : c.channel_importance) x = u(rng);
  c.rank_all();
  return c;
}

Json good() { return Json::parse(calibration_json(good_calibration())); }

// `edit` applied to the good file must give one error containing `needle`.
void bad(const std::function<void(Json&)>& edit, const std::string& needle) {
  Json j = good();
  edit(j);
  test::expect_error([&] { parse_calibration(j.dump(), "c.json"); }, needle);
}

TEST(CalibrationFile, GoodFileRoundTrips) {
  const Calibration c = parse_calibration(good().dump(), "c.json");
  EXPECT_EQ(c.k, 8);
  EXPECT_EQ(c.layers, (std::vector<int>{0, 1}));
  EXPECT_EQ(c.n_fc(), 4);
  EXPECT_TRUE(c.has_channel_importance());
  const std::string text = calibration_json(good_calibration());
  EXPECT_EQ(calibration_json(parse_calibration(text, "c.json")), text);
}

TEST(CalibrationFile, EveryNumberIsRangeChecked) {
  // out of range (3e9 was read as K = -2147483648 before)
  bad([](Json& j) { j["k"] = 3e9; },
      "c.json: field \"k\" must be an integer in [0, 1073741824] (got 3000000000.0)");
  bad([](Json& j) { j["k"] = 3000000000u; }, "field \"k\" must be an integer");
  // negative
  bad([](Json& j) { j["model"]["n_layers"] = -1; },
      "c.json: field \"model.n_layers\" must be an integer in [1, 65536] (got -1)");
  bad([](Json& j) { j["text"]["n_tokens"] = -5; }, "field \"text.n_tokens\"");
  bad([](Json& j) { j["model"]["n_kv_heads"] = 5; },
      "field \"model.n_kv_heads\" must be an integer in [1, 4]");
  // not an integer
  bad([](Json& j) { j["model"]["head_dim"] = 8.5; }, "field \"model.head_dim\" must be an integer");
  bad([](Json& j) { j["samples"] = 2.0; }, "field \"samples\" must be an integer");
  // wrong type
  bad([](Json& j) { j["steps"] = "3"; },
      "field \"steps\" must be an integer in [0, 1073741824] "
      "(got \"3\")");
  bad([](Json& j) { j["model"]["arch"] = 7; }, "field \"model.arch\" must be a string");
  bad([](Json& j) { j["model"] = "tiny"; }, "field \"model\" must be an object");
  bad([](Json& j) { j["fc_dims"][1] = 3; }, "field \"fc_dims[1]\" must be a pair");
  bad([](Json& j) { j["fc_dims"][1][0] = 99; },
      "field \"fc_dims[1][0]\" must be an integer in "
      "[0, 7]");
  bad([](Json& j) { j["layers"] = {0, 5e9}; }, "field \"layers[1]\" must be an integer in [0, 1]");
  bad([](Json& j) { j["heads"][3]["layer"] = 2; },
      "field \"heads[3].layer\" must be an integer in [0, 1]");
  bad([](Json& j) { j["heads"][3]["head"] = -1; }, "field \"heads[3].head\"");
  bad([](Json& j) { j["heads"][2]["mean_ca"][1] = 1e39; },
      "field \"heads[2].mean_ca[1]\" must be a number in [0, ");
  bad([](Json& j) { j["heads"][2]["mean_ca"][1] = -0.5; }, "field \"heads[2].mean_ca[1]\"");
  bad([](Json& j) { j["heads"][2]["mean_ca"] = {0.5}; },
      "field \"heads[2].mean_ca\" has 1 elements, expected 4");
  bad([](Json& j) { j["heads"][0]["channel_importance"][7] = nullptr; },
      "field \"heads[0].channel_importance[7]\" must be a number");
  bad([](Json& j) { j["heads"][5] = 1; }, "field \"heads[5]\" must be an object (got 1)");
  // missing
  bad([](Json& j) { j.erase("version"); }, "c.json: missing field \"version\"");
  bad([](Json& j) { j["text"].erase("sha256"); }, "c.json: missing field \"text.sha256\"");
  bad([](Json& j) { j["heads"][1].erase("channel_importance"); },
      "missing field \"heads[1].channel_importance\"");
  bad([](Json& j) { j["version"] = 5; }, "c.json' has version 5, this fasa reads versions 1 to 4");
  // version 4 needs the compound sets
  bad([](Json& j) { j["version"] = 4; }, "c.json: missing field \"n_compound\"");
  bad([](Json& j) { j["format"] = 1; }, "'c.json' is not a fasa calibration file");
  bad([](Json& j) { j["fc_layout"] = "diagonal"; }, "c.json: field \"fc_layout\": unknown FC");
}

TEST(CalibrationFile, TruncatedAndNonJsonText) {
  const std::string text = good().dump(1);
  for (size_t cut : {size_t{0}, size_t{1}, text.size() / 2, text.size() - 2}) {
    test::expect_error([&] { parse_calibration(text.substr(0, cut), "cut.json"); },
                       "cut.json: not valid JSON (");
  }
  test::expect_error([] { parse_calibration("[1, 2]", "a.json"); },
                     "a.json: expected a JSON object");
}

// The CLI: one "fasa: error:" line naming the file and the field, exit 1.
TEST(CalibrationFile, CalibShowRejectsOutOfRangeFields) {
  const std::string path =
      ::testing::TempDir() + "/calib_k3e9_" + std::to_string(getpid()) + ".json";
  Json j = good();
  j["k"] = 3e9;
  std::ofstream(path) << j.dump();
  const auto r = test::run_cli({"calib", "show", path});
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "fasa: error: " + path +
                       ": field \"k\" must be an integer in [0, 1073741824] (got 3000000000.0)\n");
  std::ofstream(path) << j.dump().substr(0, 100);
  const auto cut = test::run_cli({"calib", "show", path});
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_EQ(cut.err.rfind("fasa: error: " + path + ": not valid JSON (", 0), 0u) << cut.err;
  EXPECT_EQ(cut.err.find("[json.exception"), std::string::npos) << cut.err;
}

}  // namespace
}  // namespace fasa
