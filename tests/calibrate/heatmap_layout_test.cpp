// The calibration heatmap's layout (calibrate/heatmap.h): for the models' shapes and long model
// names, the title, axis labels, ticks and colour bar all lie inside the picture, and the title
// fits its width.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fasa/calibrate/heatmap.h"
#include "support/svg_bounds.h"
#include "support/xml_check.h"

namespace fasa {
namespace {

// A calibration of the given shape, named `name`, CA rising with the FC id.
Calibration shaped(int n_layers, int n_heads, int n_fc, const std::string& name) {
  Calibration c;
  c.model_name = name;
  c.n_layers = n_layers;
  c.n_heads = n_heads;
  c.n_kv_heads = std::max(1, n_heads / 4);
  c.head_dim = 2 * n_fc;
  c.fcs.resize(n_fc);
  for (int f = 0; f < n_fc; ++f) c.fcs[f] = {2 * f, 2 * f + 1};
  c.layers.resize(n_layers);
  std::iota(c.layers.begin(), c.layers.end(), 0);
  c.mean_ca.resize(size_t(n_layers) * n_heads * n_fc);
  for (size_t i = 0; i < c.mean_ca.size(); ++i) {
    c.mean_ca[i] = float(i % n_fc) / float(std::max(n_fc - 1, 1));
  }
  c.rank_all();
  return c;
}

const std::string kLongName =
    "Qwen2.5-Coder-1.5B-Instruct-abliterated-finetuned-on-a-long-descriptive-corpus-name-"
    "Q4_K_M-imatrix-with-an-even-longer-suffix";

// Every element inside the viewBox; the title's estimated width (0.55 em a character) fits
// between its x and the right edge; the title and subtitle name the model and what is drawn.
void expect_laid_out(const Calibration& c, const std::string& what) {
  const auto root = test::parse_xml(calibration_heatmap_svg(c));
  const auto [w, h] = test::svg_view_size(root);
  for (const test::SvgBox& b : test::svg_boxes(root)) {
    EXPECT_TRUE(b.x0 >= 0 && b.y0 >= 0 && b.x1 <= w && b.y1 <= h)
        << what << ": <" << b.tag << " class=" << b.cls << "> '" << b.text << "' at [" << b.x0
        << ", " << b.x1 << "] x [" << b.y0 << ", " << b.y1 << "] leaves the " << w << " x " << h
        << " picture";
  }
  const auto titles = root.find_all("text", "title");
  ASSERT_EQ(titles.size(), 1u) << what;
  const double x = std::stod(titles[0]->attr("x"));
  const double size = std::stod(titles[0]->attr("font-size"));
  EXPECT_LE(x + test::estimated_text_width(titles[0]->text, size), w) << what;
  std::string all = titles[0]->text;
  for (const auto& s : root.texts("subtitle")) all += " " + s;
  EXPECT_EQ(all.rfind(c.model_name, 0), 0u) << what;
  EXPECT_NE(all.find("mean contextual agreement per FC"), std::string::npos) << what;
  // The grid lies below the title block, whatever its lines.
  for (const auto* cell : root.find_all("rect", "cell")) {
    ASSERT_GT(std::stod(cell->attr("y")), 20.0 + (root.texts("subtitle").empty() ? 0 : 18)) << what;
  }
}

TEST(HeatmapLayout, ModelShapesAndLongNamesFitThePicture) {
  for (const int n_layers : {16, 22, 28, 36}) {
    for (const int n_heads : {8, 32}) {
      for (const int n_fc : {8, 32, 64}) {
        for (const std::string& name : {std::string("tiny"), kLongName}) {
          expect_laid_out(shaped(n_layers, n_heads, n_fc, name),
                          fmt::format("{} layers x {} heads x {} FCs, '{}'", n_layers, n_heads,
                                      n_fc, name));
        }
      }
    }
  }
}

// A short grid (a hybrid model's few global layers, or one layer) still holds the rotated
// y-axis label and the note under it; a title that fits stays on one line.
TEST(HeatmapLayout, FewRowsAndHybridNotesFit) {
  Calibration hybrid = shaped(3, 4, 128, "Gemma 3 270m");
  hybrid.n_layers = 18;
  hybrid.layers = {5, 11, 17};
  expect_laid_out(hybrid, "hybrid");
  Calibration narrow_hybrid = shaped(6, 4, 8, kLongName);
  narrow_hybrid.n_layers = 36;
  narrow_hybrid.layers = {5, 11, 17, 23, 29, 35};
  expect_laid_out(narrow_hybrid, "narrow hybrid");
  expect_laid_out(shaped(1, 1, 1, "x"), "one cell");
  const auto one_line = test::parse_xml(calibration_heatmap_svg(shaped(16, 8, 64, "tiny")));
  EXPECT_TRUE(one_line.texts("subtitle").empty());
  EXPECT_EQ(one_line.texts("title")[0].rfind("tiny — mean contextual agreement per FC", 0), 0u);
  // A long name: the name alone on the first line, what is drawn under it.
  const auto two = test::parse_xml(calibration_heatmap_svg(shaped(16, 8, 64, kLongName)));
  EXPECT_EQ(two.texts("title"), std::vector<std::string>{kLongName});
  ASSERT_EQ(two.texts("subtitle").size(), 1u);
  EXPECT_EQ(two.texts("subtitle")[0].rfind("mean contextual agreement per FC (K = ", 0), 0u);
}

}  // namespace
}  // namespace fasa
