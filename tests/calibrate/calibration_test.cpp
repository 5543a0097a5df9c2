// Calibration on tiny models: the statistic's invariants, the file format and its bindings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>

#include <nlohmann/json.hpp>

#include "fasa/calibrate/calibrator.h"
#include "fasa/calibrate/heatmap.h"
#include "fasa/core/error.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/cli_runner.h"
#include "support/model_path.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

std::shared_ptr<const Model> tiny(const std::string& name, uint32_t seed = 1, int n_heads = 4) {
  const std::string path = ::testing::TempDir() + "/" + name;
  test::TinySpec s;
  s.seed = seed;
  s.n_heads = n_heads;
  s.wtype = DType::Q8_0;
  test::write_tiny_model(path, s);
  return Model::load(path);
}

std::vector<int32_t> text_tokens(int n) {
  std::mt19937 rng(3);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng() % 320);
  return t;
}

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

CalibrateOptions small_opts() {
  CalibrateOptions o;
  o.k = 8;
  o.samples = 3;
  o.tokens = 40;
  o.steps = 5;
  return o;
}

TEST(Calibration, MeansAreAgreementsAndRanked) {
  auto m = tiny("calib_a.gguf");
  const Calibration c = calibrate(m, text_tokens(200), small_opts(), nullptr);
  EXPECT_EQ(c.n_fc(), 8);  // head_dim 16
  ASSERT_EQ(c.mean_ca.size(), 2u * 4 * 8);
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 4; ++h) {
      for (int i = 0; i < c.n_fc(); ++i) {
        EXPECT_GE(c.ca(l, h)[i], 0.0f);
        EXPECT_LE(c.ca(l, h)[i], 1.0f);
      }
      for (int i = 1; i < c.n_fc(); ++i) {
        EXPECT_GE(c.ca(l, h)[c.rank(l, h)[i - 1]], c.ca(l, h)[c.rank(l, h)[i]]);
      }
    }
  }
  // Not degenerate: some FC disagrees with the head somewhere.
  EXPECT_LT(*std::min_element(c.mean_ca.begin(), c.mean_ca.end()), 1.0f);
}

TEST(Calibration, FileRoundTripAndBindings) {
  auto m = tiny("calib_c.gguf");
  const Calibration c = calibrate(m, text_tokens(200), small_opts(), nullptr);
  const std::string path = ::testing::TempDir() + "/calib_c.json";
  save_calibration(c, path);
  const Calibration back = load_calibration(path);
  EXPECT_EQ(back.mean_ca, c.mean_ca);
  EXPECT_EQ(back.ranked, c.ranked);
  EXPECT_EQ(back.model_sha256, c.model_sha256);
  EXPECT_NO_THROW(check_calibration(back, policy_context(m), path));
  // Same shape, other weights: refused by identity.
  auto other = tiny("calib_d.gguf", 2);
  EXPECT_THROW(check_calibration(back, policy_context(other), path), Error);
  // Other shape: refused by shape.
  auto wide = tiny("calib_e.gguf", 1, 2);
  EXPECT_THROW(check_calibration(back, policy_context(wide), path), Error);
}

TEST(Calibration, AdjacentLayoutIsRecordedAndChecked) {
  auto m = tiny("calib_f.gguf");
  CalibrateOptions o = small_opts();
  o.fc_layout = FcLayout::Adjacent;
  const Calibration c = calibrate(m, text_tokens(200), o, nullptr);
  EXPECT_EQ(c.fcs[1].a, 4);  // NORM model: authors' chunk 1 = GGUF dims (4, 6)
  const std::string path = ::testing::TempDir() + "/calib_f.json";
  save_calibration(c, path);
  EXPECT_EQ(load_calibration(path).fc_layout, FcLayout::Adjacent);
  // A file whose dims disagree with its declared layout is refused.
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  j["fc_layout"] = "rope";
  std::ofstream(path) << j.dump();
  EXPECT_THROW(load_calibration(path), Error);
}

TEST(Calibration, BadFilesAndOptions) {
  const std::string dir = ::testing::TempDir();
  EXPECT_THROW(load_calibration(dir + "/does_not_exist.json"), Error);
  std::ofstream(dir + "/junk.json") << "{not json";
  EXPECT_THROW(load_calibration(dir + "/junk.json"), Error);
  std::ofstream(dir + "/other.json") << R"({"format": "something-else"})";
  EXPECT_THROW(load_calibration(dir + "/other.json"), Error);
  std::ofstream(dir + "/v9.json") << R"({"format": "fasa-calibration", "version": 9})";
  EXPECT_THROW(load_calibration(dir + "/v9.json"), Error);
  std::ofstream(dir + "/partial.json") << R"({"format": "fasa-calibration", "version": 1})";
  EXPECT_THROW(load_calibration(dir + "/partial.json"), Error);

  auto m = tiny("calib_g.gguf");
  CalibrateOptions o = small_opts();
  EXPECT_THROW(calibrate(m, text_tokens(30), o, nullptr), Error);  // text too short
  o.k = 40;
  EXPECT_THROW(calibrate(m, text_tokens(200), o, nullptr), Error);  // tokens <= k
  o = small_opts();
  o.tokens = 1000;
  EXPECT_THROW(calibrate(m, text_tokens(2000), o, nullptr), Error);  // beyond context 256
  o = small_opts();
  o.samples = 0;
  EXPECT_THROW(calibrate(m, text_tokens(200), o, nullptr), Error);
}

// A hand-made calibration of the given shape, CA rising with the FC id.
Calibration synthetic_calibration(int n_layers, int n_fc) {
  Calibration c;
  c.model_name = "synthetic";
  c.n_layers = n_layers;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 2 * n_fc;
  c.fcs.resize(n_fc);
  for (int f = 0; f < n_fc; ++f) c.fcs[f] = {2 * f, 2 * f + 1};
  c.mean_ca.resize(size_t(n_layers) * c.n_heads * n_fc);
  for (size_t i = 0; i < c.mean_ca.size(); ++i) {
    c.mean_ca[i] = float(i % n_fc) / float(std::max(n_fc - 1, 1));
  }
  c.rank_all();
  return c;
}

TEST(CalibrationHeatmap, PngGrowsByOneCellPerLayerAndFc) {
  auto size_of = [](int n_layers, int n_fc) {
    const std::string png = calibration_heatmap_png(synthetic_calibration(n_layers, n_fc));
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_EQ(png.substr(12, 4), "IHDR");
    return std::make_pair(be32(png, 16), be32(png, 20));
  };
  const auto base = size_of(12, 8);
  EXPECT_EQ(size_of(13, 8).second, base.second + 10);  // cells are 10 px high
  EXPECT_EQ(size_of(12, 9).first, base.first + 14);    // and 14 px wide
  EXPECT_EQ(size_of(13, 8).first, base.first);
  // Small models still get a readable colour bar, and tiny shapes do not break the drawing.
  EXPECT_GE(size_of(1, 1).second, 100u);
  // The SVG of the same calibration still draws every cell.
  const std::string svg = calibration_heatmap_svg(synthetic_calibration(3, 4));
  EXPECT_NE(svg.find("layer 2 FC 3: 1.000"), std::string::npos);
}

TEST(CalibrationCli, CalibrateAndShowOnRealModel) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const std::string out = ::testing::TempDir() + "/smollm2_calib.json";
  const std::string text = std::string(FASA_SOURCE_DIR) + "/../shared/data/texts/austen_emma.txt";
  const auto r = test::run_cli({"calibrate", "-m", path, "--text", text, "-o", out, "--tokens",
                                "80", "--steps", "3", "--samples", "2", "--k", "16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("sample 2/2"), std::string::npos);
  const auto show = test::run_cli({"calib", "show", out, "--n-tip", "4", "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto j = nlohmann::json::parse(show.out);
  EXPECT_EQ(j["layers"].size(), 30u);
  EXPECT_EQ(j["layers"][0].size(), 9u);
  EXPECT_EQ(j["layers"][0][0]["dominant"].size(), 4u);
  // The policy flags, on the real model.
  const auto run = test::run_cli({"run", "-m", path, "-p", "It is a truth universally", "-n",
                                  "6", "--temp", "0", "--policy", "fasa", "--calib", out,
                                  "--budget", "4", "--dense-layers", "0,1", "--sink", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("policy fasa:calib="), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("dense_layers=0+1"), std::string::npos) << run.err;
  const auto no_calib = test::run_cli({"run", "-m", path, "-p", "x", "--policy", "fasa",
                                       "--budget", "4"});
  EXPECT_EQ(no_calib.exit_code, 1);
  EXPECT_NE(no_calib.err.find("needs a calibration file"), std::string::npos) << no_calib.err;
  // A calibration made for SmolLM2 is refused for another model.
  const std::string tiny_path = ::testing::TempDir() + "/calib_cli_tiny.gguf";
  test::write_tiny_model(tiny_path, {});
  const auto other = test::run_cli({"bench", "-m", tiny_path, "-p", "8", "-n", "2", "--policy",
                                    "fasa", "--calib", out, "--budget", "4"});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.err.find("different model shape"), std::string::npos) << other.err;

  const auto bad = test::run_cli({"calibrate", "-m", path, "--text", text, "-o", out,
                                  "--fc-layout", "diagonal"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown FC layout"), std::string::npos);
  const std::string svg = ::testing::TempDir() + "/smollm2_calib.svg";
  const auto img = test::run_cli({"calib", "show", out, "--image", svg});
  ASSERT_EQ(img.exit_code, 0) << img.err;
  std::ifstream in(svg);
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(doc.rfind("<svg", 0), 0u);
  EXPECT_NE(doc.find("layer 29 FC 31:"), std::string::npos);  // every cell is drawn
  // PNG, chosen by the extension: 30 layers x 32 FCs of 14 x 10 px cells, plus margins.
  const std::string png_path = ::testing::TempDir() + "/smollm2_calib_heatmap_cli.png";
  std::remove(png_path.c_str());
  const auto png = test::run_cli({"calib", "show", out, "--image", png_path});
  ASSERT_EQ(png.exit_code, 0) << png.err;
  std::ifstream png_in(png_path, std::ios::binary);
  const std::string png_doc((std::istreambuf_iterator<char>(png_in)),
                            std::istreambuf_iterator<char>());
  ASSERT_GE(png_doc.size(), 33u);
  EXPECT_EQ(png_doc.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png_doc.substr(12, 4), "IHDR");
  const uint32_t png_w = be32(png_doc, 16), png_h = be32(png_doc, 20);
  EXPECT_GE(png_w, 32u * 14);
  EXPECT_LE(png_w, 32u * 14 + 200);
  EXPECT_GE(png_h, 30u * 10);
  EXPECT_LE(png_h, 30u * 10 + 100);
  // Any other extension is refused, naming both allowed ones, and nothing is written.
  const std::string jpg_path = ::testing::TempDir() + "/smollm2_calib_heatmap_cli.jpg";
  std::remove(jpg_path.c_str());
  const auto jpg = test::run_cli({"calib", "show", out, "--image", jpg_path});
  EXPECT_EQ(jpg.exit_code, 1);
  EXPECT_NE(jpg.err.find(".svg"), std::string::npos) << jpg.err;
  EXPECT_NE(jpg.err.find(".png"), std::string::npos) << jpg.err;
  EXPECT_FALSE(std::ifstream(jpg_path).good());
  const auto missing = test::run_cli({"calib", "show", "/nonexistent.json"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("cannot read calibration file"), std::string::npos);
}

}  // namespace
}  // namespace fasa
