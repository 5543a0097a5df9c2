// The line plots' layout (eval/line_plot.h, eval/plot_layout.h, and sweep_plots' use of them):
// the full-attention reference stays visible over a series equal to it, every point lies inside
// a padded frame with nice ticks, score-vs-bytes points carry their budgets without overlapping
// labels, and nothing leaves the picture, long texts included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fasa/eval/line_plot.h"
#include "fasa/eval/plot_layout.h"
#include "fasa/eval/sweep.h"
#include "fasa/io/svg.h"
#include "support/svg_bounds.h"
#include "support/xml_check.h"

namespace fasa {
namespace {

using test::SvgBox;

// The frame: the plot area's outline (the one unclassed rect with no fill).
SvgBox frame_of(const std::vector<SvgBox>& boxes) {
  for (const SvgBox& b : boxes) {
    if (b.tag == "rect" && b.cls == "frame") return b;
  }
  ADD_FAILURE() << "no <rect class=\"frame\">";
  return {};
}

std::vector<SvgBox> of_class(const std::vector<SvgBox>& boxes, const std::string& cls) {
  std::vector<SvgBox> out;
  for (const SvgBox& b : boxes) {
    if (b.cls == cls) out.push_back(b);
  }
  return out;
}

// Every drawn element lies inside the viewBox (which the width and height repeat).
void expect_inside_picture(const std::string& svg, const std::string& what) {
  const auto root = test::parse_xml(svg);
  const auto [w, h] = test::svg_view_size(root);
  for (const SvgBox& b : test::svg_boxes(root)) {
    EXPECT_TRUE(b.x0 >= 0 && b.y0 >= 0 && b.x1 <= w && b.y1 <= h)
        << what << ": <" << b.tag << " class=" << b.cls << "> '" << b.text << "' at [" << b.x0
        << ", " << b.x1 << "] x [" << b.y0 << ", " << b.y1 << "] leaves the " << w << " x " << h
        << " picture";
  }
}

// A series equal to the reference everywhere, and one below it.
LinePlot equal_to_full() {
  LinePlot p;
  p.title = "mean score over task kinds";
  p.x_label = "budget";
  p.y_label = "score";
  p.series = {{"fasa", {16, 64, 256, 1024}, {1, 1, 1, 1}, {}, {}},
              {"streaming", {16, 64, 256, 1024}, {0, 0, 0.5, 1}, {}, {}}};
  p.references = {{"full", 1.0}};
  return p;
}

// The reference comes after every series in the document (drawn over them), dashed, in a colour
// no series has, and named on the plot as well as in the legend (also dashed there).
TEST(LinePlotLayout, FullReferenceIsDrawnOverASeriesEqualToIt) {
  const std::string svg = line_plot_svg(equal_to_full());
  const auto root = test::parse_xml(svg);
  const auto boxes = test::svg_boxes(root, svg_text_width);
  const auto refs = root.find_all("line", "reference");
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_FALSE(refs[0]->attr("stroke-dasharray").empty());
  size_t ref_order = 0, last_point = 0;
  for (const SvgBox& b : boxes) {
    if (b.cls == "reference") ref_order = b.order;
    if (b.cls == "point" || b.tag == "polyline") last_point = std::max(last_point, b.order);
  }
  EXPECT_GT(ref_order, last_point);
  const std::string ref_colour = refs[0]->attr("stroke");
  for (const auto* line : root.find_all("polyline")) EXPECT_NE(line->attr("stroke"), ref_colour);
  EXPECT_EQ(root.texts("reference-label"), std::vector<std::string>{"full"});
  EXPECT_EQ(root.texts("legend"), (std::vector<std::string>{"full", "fasa", "streaming"}));
  // Its label lies inside the frame, on no point.
  const SvgBox frame = frame_of(boxes);
  for (const SvgBox& label : of_class(boxes, "reference-label")) {
    EXPECT_TRUE(label.x0 > frame.x0 && label.x1 < frame.x1 && label.y0 > frame.y0 &&
                label.y1 < frame.y1);
    for (const SvgBox& pt : of_class(boxes, "point")) EXPECT_FALSE(test::boxes_overlap(label, pt));
  }
  // The legend's line for the reference is dashed: it is the one legend line of its colour.
  bool dashed_legend = false;
  for (const auto* line : root.find_all("line")) {
    dashed_legend |= line->attr("class").empty() && line->attr("stroke") == ref_colour &&
                     !line->attr("stroke-dasharray").empty();
  }
  EXPECT_TRUE(dashed_legend);
}

// Every point lies inside the frame, at least 4 % of its size off each edge: scores of exactly
// 0 and 1, a single point, a wide range of bytes.
TEST(LinePlotLayout, PointsLieInsideAPaddedFrame) {
  LinePlot single;
  single.series = {{"oracle", {64}, {1.0}, {}, {}}};
  LinePlot bytes = equal_to_full();
  bytes.x_bytes = true;
  bytes.series[1].x = {1024, 65536, 1048576, 67108864};
  LinePlot wide = equal_to_full();
  wide.series[0].y = {-2.5, 3.0, 7.0, 1.0};  // beyond [y_min, y_max]: the axis grows
  for (const LinePlot& p : {equal_to_full(), single, bytes, wide}) {
    const auto boxes = test::svg_boxes(test::parse_xml(line_plot_svg(p)));
    const SvgBox frame = frame_of(boxes);
    const double mx = 0.04 * (frame.x1 - frame.x0), my = 0.04 * (frame.y1 - frame.y0);
    const auto points = of_class(boxes, "point");
    ASSERT_FALSE(points.empty());
    for (const SvgBox& pt : points) {
      EXPECT_GT(pt.x0, frame.x0 + mx);
      EXPECT_LT(pt.x1, frame.x1 - mx);
      EXPECT_GT(pt.y0, frame.y0 + my);
      EXPECT_LT(pt.y1, frame.y1 - my);
    }
  }
}

// The score axis covers [0, 1] with room around it, ticked at 0.00, 0.20, ..., 1.00, each tick
// inside the frame; a wider range gets nice steps too.
TEST(LinePlotLayout, NiceTicksCoverTheScoreRange) {
  const auto root = test::parse_xml(line_plot_svg(equal_to_full()));
  std::vector<std::string> y_ticks;
  for (const auto* t : root.find_all("text", "tick")) {
    if (t->attr("text-anchor") == "end") y_ticks.push_back(t->text);
  }
  EXPECT_EQ(y_ticks, (std::vector<std::string>{"0.00", "0.20", "0.40", "0.60", "0.80", "1.00"}));
  int decimals = 0;
  EXPECT_EQ(nice_ticks(0.0, 37.0, 5, 0.0, 0, decimals), (std::vector<double>{0, 10, 20, 30}));
  EXPECT_EQ(decimals, 0);
  const auto fine = nice_ticks(0.0, 0.37, 5, 0.0, 0, decimals);
  ASSERT_EQ(fine.size(), 4u);
  EXPECT_NEAR(fine[3], 0.3, 1e-12);
  EXPECT_EQ(decimals, 1);
  EXPECT_EQ(nice_ticks(0.0, 1.0, 4, 0.0, 0, decimals),
            (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(decimals, 2);
  EXPECT_EQ(nice_ticks(-1.0, 1.0, 4, 0.1, 0, decimals), (std::vector<double>{-1, -0.5, 0, 0.5, 1}));
  EXPECT_EQ(nice_ticks(100.0, 1000.0, 5, 0.0, 0, decimals),
            (std::vector<double>{200, 400, 600, 800, 1000}));
}

// A label goes to the first free place beside its point; a taken place moves it on; with every
// place taken it goes where it overlaps least, and always stays inside the area.
TEST(LinePlotLayout, LabelsAvoidWhatIsTaken) {
  const PlotBox area{0, 0, 200, 200};
  std::vector<PlotBox> taken;
  const auto first = place_label(spots_beside(100, 100, 3, 10), 20, 10, area, taken);
  EXPECT_EQ(first.anchor, "start");
  EXPECT_LT(first.y, 100.0);  // right-above
  ASSERT_EQ(taken.size(), 1u);
  const auto second = place_label(spots_beside(100, 100, 3, 10), 20, 10, area, taken);
  EXPECT_EQ(second.anchor, "end");  // left-above: right-above is taken
  EXPECT_EQ(overlap_area(taken[0], taken[1]), 0.0);
  // Near the right edge, the right-hand places leave the area.
  std::vector<PlotBox> none;
  EXPECT_EQ(place_label(spots_beside(195, 100, 3, 10), 20, 10, area, none).anchor, "end");
  std::vector<PlotBox> full_area = {area};
  const auto crowded = place_label(spots_beside(100, 100, 3, 10), 20, 10, area, full_area);
  const PlotBox b = text_box(crowded.x, crowded.y, 20, 10, crowded.anchor);
  EXPECT_TRUE(b.x0 >= 0 && b.x1 <= 200 && b.y0 >= 0 && b.y1 <= 200);
}

// Long titles, axis labels, legend names and notes widen the picture instead of leaving it.
TEST(LinePlotLayout, NothingLeavesThePicture) {
  LinePlot p = equal_to_full();
  expect_inside_picture(line_plot_svg(p), "plain");
  p.title = std::string(160, 'M') + " — the title";
  p.x_label = "KV bytes read per decoded token " + std::string(120, 'x');
  p.series[0].name = "fasa:calib=/some/long/path/to/a/calibration/file/of/this/model.json";
  p.references[0].name = "full attention reference, the long way round";
  p.note = "point labels: budget in tokens, or the fraction of the context";
  p.series[1].labels = {"16", "64", "256", "1024"};
  const std::string svg = line_plot_svg(p);
  expect_inside_picture(svg, "long texts");
  const auto root = test::parse_xml(svg);
  EXPECT_EQ(root.texts("title"), std::vector<std::string>{p.title});
  EXPECT_EQ(root.texts("note"), std::vector<std::string>{p.note});
  // A reference with its own point, its error bar reaching past the y range: cut at its ends.
  p.references[0].x = 2048;
  p.references[0].err = 0.7;
  expect_inside_picture(line_plot_svg(p), "reference point");
  EXPECT_EQ(test::parse_xml(line_plot_svg(p)).find_all("circle", "reference-point").size(), 1u);
}

// Hand-made sweep results: 2 tasks of one kind; full, oracle and streaming at 3 budgets, the
// bytes read growing with the budget, oracle and streaming equal to full at the largest.
Task contains_x(const std::string& id) {
  Task t;
  t.id = id;
  t.task = "k";
  t.prompt = "p";
  t.answers = {"x"};
  t.max_new_tokens = 4;
  return t;
}

struct SweepFixture {
  std::vector<Task> tasks = {contains_x("1"), contains_x("2")};
  std::vector<SweepEntry> entries =
      sweep_entries({"full", "oracle", "streaming"}, {"16", "64", "1024"}, "");
  TaskRunResult r;
  SweepFixture() {
    r.n_prompt = {500, 500};
    r.n_ctx = 512;
    r.outcome.resize(2);
    for (const auto& e : entries) {
      r.policies.push_back(e.spec);
      const bool big = e.budget <= 0.0 || e.budget >= 1024;
      for (size_t i = 0; i < 2; ++i) {
        TaskOutcome o;
        o.score = o.partial = big || e.name == "oracle" || i == 0 ? 1.0 : 0.0;
        o.output = "x";
        o.attn.decode_tokens = 4;
        o.attn.attend_bytes = big ? 4 * 11272 * 1024 : uint64_t(e.budget * 4 * (1024 + 512));
        r.outcome[i].push_back(o);
      }
    }
  }
};

const std::string& plot_named(const std::vector<std::pair<std::string, std::string>>& plots,
                              const std::string& name) {
  for (const auto& [n, svg] : plots) {
    if (n == name) return svg;
  }
  ADD_FAILURE() << name << " missing";
  return plots.front().second;
}

// In score_vs_budget full (no budget) is the reference over oracle's equal line; in
// score_vs_bytes every budgeted point carries its budget, full is a reference with its own
// ringed point, and no label overlaps another or a mark.
TEST(LinePlotLayout, SweepPlotsShowFullAndLabelEveryPointWithItsBudget) {
  SweepFixture f;
  const auto plots = sweep_plots(f.tasks, f.entries, f.r);
  const auto budget = test::parse_xml(plot_named(plots, "score_vs_budget.svg"));
  EXPECT_EQ(budget.texts("reference-label"), std::vector<std::string>{"full"});
  EXPECT_TRUE(budget.texts("point-label").empty());
  const auto bytes = test::parse_xml(plot_named(plots, "score_vs_bytes.svg"));
  const auto series = bytes.find_all("g", "series");
  ASSERT_EQ(series.size(), 2u);  // oracle, streaming; full is the reference
  EXPECT_EQ(bytes.find_all("circle", "point").size(), 6u);
  std::vector<std::string> labels = bytes.texts("point-label");
  std::sort(labels.begin(), labels.end());
  EXPECT_EQ(labels, (std::vector<std::string>{"1024", "1024", "16", "16", "64", "64"}));
  EXPECT_EQ(bytes.texts("reference-label"), std::vector<std::string>{"full"});
  EXPECT_EQ(bytes.find_all("circle", "reference-point").size(), 1u);
  EXPECT_EQ(bytes.texts("note"), std::vector<std::string>{"point labels: budget"});
  // Labels are placed by the picture's own text metric (io/svg.h): measured by it, none
  // overlaps another or a mark.
  const auto boxes = test::svg_boxes(bytes, svg_text_width);
  const SvgBox frame = frame_of(boxes);
  std::vector<SvgBox> texts = of_class(boxes, "point-label");
  for (const SvgBox& t : of_class(boxes, "reference-label")) texts.push_back(t);
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_TRUE(texts[i].x0 > frame.x0 && texts[i].x1 < frame.x1 && texts[i].y0 > frame.y0 &&
                texts[i].y1 < frame.y1)
        << texts[i].text;
    for (const SvgBox& b : boxes) {
      if (b.cls == "point" || b.cls == "reference-point") {
        EXPECT_FALSE(test::boxes_overlap(texts[i], b, 1.0)) << "'" << texts[i].text << "'";
      }
    }
    for (size_t j = 0; j < i; ++j) {
      EXPECT_FALSE(test::boxes_overlap(texts[i], texts[j], 1.0))
          << "'" << texts[i].text << "' overlaps '" << texts[j].text << "'";
    }
  }
  for (const auto& [name, svg] : plots) expect_inside_picture(svg, name);
}

}  // namespace
}  // namespace fasa
