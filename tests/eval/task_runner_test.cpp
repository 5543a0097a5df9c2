// The task runner (prefill once, fork per policy), score tables and sweep reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/session.h"
#include "fasa/eval/line_plot.h"
#include "fasa/eval/sweep.h"
#include "fasa/eval/task_gen.h"
#include "fasa/eval/task_runner.h"
#include "fasa/model/model.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/expect_error.h"
#include "support/model_path.h"
#include "support/xml_check.h"

namespace fasa {
namespace {

using test::expect_error;

TEST(Sweep, EntriesExpandPoliciesTimesBudgets) {
  const auto e = sweep_entries({"full", "oracle", "fasa:n_tip=0.5", "streaming:budget=32",
                                "double-sparsity", "pyramidkv+fasa"},
                               {"64", "0.1"}, "c.json");
  std::vector<std::string> specs;
  for (const auto& x : e) specs.push_back(x.spec);
  const std::vector<std::string> want = {"full",
                                         "oracle:budget=64",
                                         "oracle:budget=0.1",
                                         "fasa:budget=64,calib=c.json,n_tip=0.5",
                                         "fasa:budget=0.1,calib=c.json,n_tip=0.5",
                                         "streaming:budget=32",
                                         "double-sparsity:budget=64,calib=c.json",
                                         "double-sparsity:budget=0.1,calib=c.json",
                                         "pyramidkv+fasa:budget=64,calib=c.json",
                                         "pyramidkv+fasa:budget=0.1,calib=c.json"};
  EXPECT_EQ(specs, want);
  EXPECT_EQ(e[0].budget, 0.0);
  EXPECT_EQ(e[2].budget, 0.1);
  EXPECT_EQ(e[3].label, "fasa:n_tip=0.5");
  EXPECT_EQ(e[5].budget, 32.0);
  // No calibration given: none added.
  EXPECT_EQ(sweep_entries({"fasa"}, {"8"}, "")[0].spec, "fasa:budget=8");
  // A spec's own calibration beside --calib's: kept, and named in its label.
  const auto ab = sweep_entries({"fasa", "fasa:calib=long.json"}, {"8"}, "c.json");
  EXPECT_EQ(ab[0].label, "fasa");
  EXPECT_EQ(ab[1].spec, "fasa:budget=8,calib=long.json");
  EXPECT_EQ(ab[1].label, "fasa:calib=long.json");
  EXPECT_EQ(sweep_entries({"fasa:calib=c.json"}, {"8"}, "c.json")[0].label, "fasa");
  // Any other option of the spec stays in the label, so two settings of one policy differ.
  const auto mass = sweep_entries({"fasa", "fasa:fcs=mass"}, {"8"}, "c.json");
  EXPECT_EQ(mass[0].label, "fasa");
  EXPECT_EQ(mass[1].label, "fasa:fcs=mass");
  expect_error([] { sweep_entries({"oracle"}, {"-3"}, ""); }, "budget must be a positive");
  expect_error([] { sweep_entries({"oracle"}, {}, ""); }, "policy 'oracle' needs --budgets");
  expect_error([] { sweep_entries({}, {"8"}, ""); },
               "no policies: give --policies LIST and/or --policy SPEC");
}

// A hand-made result: 3 tasks of 2 kinds, 3 policies.
struct Fake {
  std::vector<Task> tasks;
  std::vector<SweepEntry> entries;
  TaskRunResult r;
  Fake() {
    tasks = {{"1", "kind-a", "p", {"x"}, 4, TaskMetric::Contains},
             {"2", "kind-a", "p", {"x"}, 4, TaskMetric::Contains},
             {"3", "kind/b", "p", {"x"}, 4, TaskMetric::Contains}};
    entries = sweep_entries({"full", "oracle"}, {"64", "128"}, "");
    for (const auto& e : entries) r.policies.push_back(e.spec);
    r.n_prompt = {10, 11, 12};
    r.n_ctx = 16;
    const double s[3][3] = {{1, 0, 1}, {1, 0, 0}, {1, 1, 1}};  // [task][policy]
    r.outcome.resize(3);
    for (int i = 0; i < 3; ++i) {
      for (int p = 0; p < 3; ++p) {
        TaskOutcome o;
        o.score = s[i][p];
        o.partial = s[i][p];  // single-answer tasks: partial = score
        o.output = "out";
        o.attn.decode_tokens = 2;
        o.attn.attend_bytes = 1024 * (p + 1);
        o.attn.slots_read = p == 0 ? 20 : 5;
        o.attn.slots_visible = 20;
        r.outcome[i].push_back(o);
      }
    }
  }
};

TEST(Sweep, ScoreTableAndReports) {
  Fake f;
  const TaskScoreTable t = score_table(f.tasks, f.r);
  EXPECT_EQ(t.kinds, (std::vector<std::string>{"kind-a", "kind/b"}));
  EXPECT_EQ(t.count, (std::vector<int>{2, 1}));
  EXPECT_DOUBLE_EQ(t.mean[0][2], 0.5);
  EXPECT_DOUBLE_EQ(t.mean[1][1], 1.0);
  EXPECT_DOUBLE_EQ(t.overall[2], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(t.kind_average[2], 0.75);
  SweepMeta m;
  m.model = "model.gguf";
  m.model_sha256 = "abcdef0123456789abcdef";
  m.version = "0.6.0";
  const auto j = nlohmann::json::parse(sweep_json(m, f.tasks, f.entries, f.r));
  EXPECT_EQ(j["model_sha256"], m.model_sha256);
  EXPECT_EQ(j["fasa_version"], "0.6.0");
  ASSERT_EQ(j["results"].size(), 3u);
  EXPECT_EQ(j["results"][2]["spec"], "oracle:budget=128");
  EXPECT_DOUBLE_EQ(j["results"][2]["score"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j["results"][1]["by_task"]["kind/b"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["results"][1]["kv_bytes_read_per_token"].get<double>(), 1024.0);
  EXPECT_DOUBLE_EQ(j["results"][1]["rows_read_fraction"].get<double>(), 0.25);
  EXPECT_EQ(j["items"].size(), 9u);
  const std::string md = sweep_markdown(m, f.tasks, f.entries, f.r);
  // 0.49 = 1.96 * sqrt((0.5 / 2 + 0) / 2^2): kind-a's scores 1, 0 and kind/b's one 1.
  EXPECT_NE(md.find("| oracle | 128 | 0.750 ± 0.490 | 0.750 | 75.0% | 0.50 | 1.00 | 25.0% | 2 KiB "
                    "| 0.0 | 0.00 MiB |"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| vs oracle/head |"), std::string::npos) << md;  // no per-head oracle here
  // The table names each row by its label (the spec's options other than budget= and --calib).
  Fake ablation;
  ablation.entries[2].label = "oracle:gqa=per-head";
  const std::string md2 = sweep_markdown(m, ablation.tasks, ablation.entries, ablation.r);
  EXPECT_NE(md2.find("| oracle:gqa=per-head | 128 | 0.750 ± 0.490 |"), std::string::npos) << md2;
  EXPECT_NE(md2.find("| oracle | 64 |"), std::string::npos) << md2;
  // Results that do not line up with the settings are refused, not mislabelled.
  TaskRunResult shifted = f.r;
  shifted.policies.insert(shifted.policies.begin(), "full");
  expect_error([&] { sweep_json(m, f.tasks, f.entries, shifted); }, "do not match");
  // Each row records its calibration: a policy given calib=online besides --calib's file (the
  // file's rows: its sha256).
  {
    const std::string calib = ::testing::TempDir() + "/sweep_row_calib.json";
    std::ofstream(calib) << "{}";
    Fake c;
    c.entries = sweep_entries({"full", "fasa", "fasa:calib=online"}, {"64"}, calib);
    c.r.policies.clear();
    for (const auto& e : c.entries) c.r.policies.push_back(e.spec);
    m.calib = calib;
    const auto jc = nlohmann::json::parse(sweep_json(m, c.tasks, c.entries, c.r));
    m.calib.clear();
    EXPECT_FALSE(jc["results"][0].contains("calibration"));
    EXPECT_EQ(jc["results"][1]["calibration"], "file");
    EXPECT_EQ(jc["results"][1]["calib_sha256"], sha256_file_hex(calib));
    EXPECT_EQ(jc["results"][2]["calibration"], "online");
    EXPECT_FALSE(jc["results"][2].contains("calib_sha256"));
    EXPECT_EQ(jc["results"][2]["spec"], "fasa:budget=64,calib=online");
  }
  const auto plots = sweep_plots(f.tasks, f.entries, f.r);
  ASSERT_EQ(plots.size(), 4u);
  EXPECT_EQ(plots[0].first, "score_vs_budget.svg");
  EXPECT_EQ(plots[2].first, "score_vs_budget_kind_b.svg");  // a file-name-safe kind
  EXPECT_EQ(plots[3].first, "score_vs_bytes.svg");
  EXPECT_NE(plots[0].second.find("<polyline"), std::string::npos);
  EXPECT_NE(plots[0].second.find("stroke-dasharray"), std::string::npos);  // full: a reference
  // Every plot is well-formed XML with its title, axis labels and a legend as text.
  for (const auto& [name, svg] : plots) {
    const auto root = test::parse_xml(svg);
    EXPECT_EQ(root.texts("title").size(), 1u) << name;
    EXPECT_EQ(root.texts("x-label").size(), 1u) << name;
    EXPECT_EQ(root.texts("y-label"), std::vector<std::string>{"score"}) << name;
    EXPECT_FALSE(root.texts("legend").empty()) << name;
  }
  EXPECT_EQ(test::parse_xml(plots[2].second).texts("title"),
            std::vector<std::string>{"score on kind/b"});
}

// A sweep with nothing to put on a plot (fractions of the context only, no full; nothing
// decoded) leaves those plots out instead of failing after the run or drawing empty frames.
TEST(Sweep, PlotsWithNothingToDrawAreLeftOut) {
  const std::vector<Task> tasks = {{"1", "k", "p", {"x"}, 4, TaskMetric::Contains}};
  const auto entries = sweep_entries({"oracle"}, {"0.5"}, "");
  TaskRunResult r;
  for (const auto& e : entries) r.policies.push_back(e.spec);
  r.n_prompt = {10};
  r.n_ctx = 16;
  TaskOutcome o;
  o.score = o.partial = 1.0;
  o.output = "x";
  r.outcome = {{o}};
  EXPECT_TRUE(sweep_plots(tasks, entries, r).empty());
  r.outcome[0][0].attn.decode_tokens = 2;  // now bytes were read: the bytes plot is drawn
  r.outcome[0][0].attn.attend_bytes = 2048;
  const auto plots = sweep_plots(tasks, entries, r);
  ASSERT_EQ(plots.size(), 1u);
  EXPECT_EQ(plots[0].first, "score_vs_bytes.svg");
  EXPECT_EQ(test::parse_xml(plots[0].second).find_all("circle", "point").size(), 1u);
}

// Equal-resource reporting on hand-made outcomes: partial credit beside the all-or-nothing
// score, 95 % CIs, resident bytes, the per-head oracle as every budgeted row's reference, and
// the score-against-bytes plot with its error bars.
TEST(Sweep, PartialCreditIntervalsResidentBytesAndReference) {
  const std::vector<std::string> abcd = {"a1", "b2", "c3", "d4"};
  const std::vector<Task> tasks = {{"1", "multi", "p", abcd, 4, TaskMetric::All},
                                   {"2", "multi", "p", abcd, 4, TaskMetric::All},
                                   {"3", "single", "p", {"x"}, 4, TaskMetric::Contains},
                                   {"4", "single", "p", {"x"}, 4, TaskMetric::Contains}};
  const auto entries = sweep_entries({"full", "oracle:gqa=per-head", "streaming"}, {"8"}, "");
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[1].label, "oracle:gqa=per-head");
  TaskRunResult r;
  for (const auto& e : entries) r.policies.push_back(e.spec);
  r.n_prompt = {10, 10, 10, 10};
  r.n_ctx = 16;
  // [task][setting] outputs: full finds everything; the oracle 3 of 4 answers then 4 of 4, and
  // x once; streaming 1 of 4 and 2 of 4, and x never.
  const char* out[4][3] = {{"a1 b2 c3 d4", "a1 b2 c3", "a1"},
                           {"a1 b2 c3 d4", "a1 b2 c3 d4", "c3 d4"},
                           {"x", "x", "y"},
                           {"x", "y", "y"}};
  r.outcome.resize(4);
  for (size_t i = 0; i < 4; ++i) {
    for (size_t p = 0; p < 3; ++p) {
      TaskOutcome o;
      o.output = out[i][p];
      o.score = score_output(tasks[i].metric, o.output, tasks[i].answers);
      o.partial = partial_credit(tasks[i].metric, o.output, tasks[i].answers);
      o.attn.decode_tokens = 4;
      o.attn.attend_bytes = 4096 * (3 - p);  // full 3 KiB per token, the oracle 2, streaming 1
      o.kv_resident_bytes = (p == 2 ? 1 : 4) * (i + 1) * 1048576;  // streaming holds a quarter
      r.outcome[i].push_back(o);
    }
  }
  SweepMeta m;
  const auto j = nlohmann::json::parse(sweep_json(m, tasks, entries, r));
  const auto& oracle = j["results"][1];
  // Scores: multi {0, 1}, single {1, 0}: mean of kind means 0.5; partial multi {0.75, 1}.
  EXPECT_DOUBLE_EQ(oracle["score"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(oracle["partial"].get<double>(), (0.875 + 0.5) / 2);
  EXPECT_DOUBLE_EQ(oracle["partial_by_task"]["multi"].get<double>(), 0.875);
  EXPECT_DOUBLE_EQ(oracle["by_task"]["multi"].get<double>(), 0.5);
  // Var = (0.5 / 2 + 0.5 / 2) / 4 = 0.125.
  const double half = 1.96 * std::sqrt(0.125);
  EXPECT_NEAR(oracle["score_ci95"][0].get<double>(), 0.5 - half, 1e-12);
  EXPECT_NEAR(oracle["score_ci95"][1].get<double>(), 0.5 + half, 1e-12);
  // Partial: multi {0.75, 1} (variance 0.03125), single {1, 0} (0.5).
  const double half_p = 1.96 * std::sqrt((0.03125 / 2 + 0.5 / 2) / 4);
  EXPECT_NEAR(oracle["partial_ci95"][1].get<double>(), 0.6875 + half_p, 1e-12);
  const auto& streaming = j["results"][2];
  EXPECT_DOUBLE_EQ(streaming["score"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(streaming["partial"].get<double>(), (0.25 + 0.5) / 2 / 2);
  EXPECT_DOUBLE_EQ(streaming["kv_resident_bytes"].get<double>(), 2.5 * 1048576);
  EXPECT_EQ(streaming["kv_resident_bytes_max"].get<uint64_t>(), 4u * 1048576);
  EXPECT_DOUBLE_EQ(j["results"][0]["kv_resident_bytes"].get<double>(), 10.0 * 1048576);
  EXPECT_DOUBLE_EQ(streaming["kv_bytes_read_per_token"].get<double>(), 1024.0);
  // Every budgeted row refers to the per-head oracle at its budget; full has none.
  EXPECT_EQ(streaming["reference"], "oracle:budget=8,gqa=per-head");
  EXPECT_DOUBLE_EQ(streaming["score_vs_reference"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(oracle["score_vs_reference"].get<double>(), 1.0);
  EXPECT_FALSE(j["results"][0].contains("reference"));
  EXPECT_DOUBLE_EQ(j["items"][1]["partial"].get<double>(), 0.75);
  EXPECT_EQ(j["items"][2]["kv_resident_bytes"].get<uint64_t>(), 1048576u);
  const std::string md = sweep_markdown(m, tasks, entries, r);
  EXPECT_NE(md.find("| policy | budget | score | partial | vs full | vs oracle/head |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| streaming | 8 | 0.000 ± 0.000 | 0.188 | 0.0% | 0.0% |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1 KiB | 0.0 | 2.50 MiB |"), std::string::npos) << md;
  const auto plots = sweep_plots(tasks, entries, r);
  ASSERT_EQ(plots.back().first, "score_vs_bytes.svg");
  const std::string& svg = plots.back().second;
  EXPECT_NE(svg.find(">streaming</text>"), std::string::npos);
  EXPECT_NE(svg.find(">full</text>"), std::string::npos);  // a point: full has bytes too
  EXPECT_NE(svg.find("<path d=\"M"), std::string::npos);   // error bars
  EXPECT_NE(svg.find("KiB</text>"), std::string::npos);    // byte ticks
}

// The document is well-formed XML: title, axis labels, ticks and legend as <text>, one group
// per series with one circle per point, one dashed line per reference.
TEST(LinePlot, WellFormedWithTextLabelsAndOneMarkPerPoint) {
  LinePlot p;
  p.title = "score & budget <test>";
  p.x_label = "budget (tokens)";
  p.y_label = "score";
  p.series = {{"fasa", {64, 128, 256}, {0.1, 0.5, 0.9}, {0.05, 0.0, 0.1}},
              {"oracle", {64, 256}, {0.3, 0.95}, {}}};
  p.references = {{"full", 0.97}};
  const auto root = test::parse_xml(line_plot_svg(p));
  EXPECT_EQ(root.name, "svg");
  EXPECT_EQ(root.attr("xmlns"), "http://www.w3.org/2000/svg");
  EXPECT_EQ(root.texts("title"), std::vector<std::string>{"score & budget <test>"});
  EXPECT_EQ(root.texts("x-label"), std::vector<std::string>{"budget (tokens)"});
  EXPECT_EQ(root.texts("y-label"), std::vector<std::string>{"score"});
  EXPECT_EQ(root.texts("legend"), (std::vector<std::string>{"full", "fasa", "oracle"}));
  const auto series = root.find_all("g", "series");
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0]->find_all("circle", "point").size(), 3u);
  EXPECT_EQ(series[1]->find_all("circle", "point").size(), 2u);
  EXPECT_EQ(root.find_all("circle", "point").size(), 5u);
  EXPECT_EQ(root.find_all("line", "reference").size(), 1u);
  EXPECT_EQ(root.find_all("path").size(), 2u);  // the two non-zero error bars
  // Ticks: y in fifths of [0, 1], x at the powers of two 64, 128, 256.
  const auto ticks = root.texts("tick");
  for (const char* t : {"0.00", "0.20", "1.00", "64", "128", "256"}) {
    EXPECT_NE(std::find(ticks.begin(), ticks.end(), t), ticks.end()) << t;
  }
}

// Bad input: one clear error each, naming what is wrong.
TEST(LinePlot, RefusesWhatCannotBeDrawn) {
  LinePlot empty;
  empty.title = "nothing";
  expect_error([&] { line_plot_svg(empty); }, "plot 'nothing': nothing to draw");
  LinePlot p;
  p.series = {{"s", {64, 128}, {0.5, NAN}, {}}};
  expect_error([&] { line_plot_svg(p); }, "plot series 's': y at x = 128 is nan");
  p.series[0].y = {0.5, 0.6};
  p.series[0].x = {64, INFINITY};
  expect_error([&] { line_plot_svg(p); }, "x must be > 0 and finite");
  p.series[0].x = {64, 128};
  p.series[0].err = {0.1, -0.1};
  expect_error([&] { line_plot_svg(p); }, "error bar at x = 128 is -0.1");
  p.series[0].err = {0.1, NAN};
  expect_error([&] { line_plot_svg(p); }, "error bar at x = 128 is nan");
  p.series[0].err.clear();
  p.references = {{"full", NAN}};
  expect_error([&] { line_plot_svg(p); }, "reference 'full' is at y = nan");
  p.references.clear();
  p.series.push_back({"hollow", {}, {}, {}});
  expect_error([&] { line_plot_svg(p); }, "plot series 'hollow': no points");
  p.series.pop_back();
  p.y_max = NAN;
  expect_error([&] { line_plot_svg(p); }, "is not finite");
  // References alone (a sweep of full only) are a plot.
  LinePlot refs;
  refs.references = {{"full", 0.5}};
  EXPECT_EQ(test::parse_xml(line_plot_svg(refs)).find_all("line", "reference").size(), 1u);
}

TEST(LinePlot, SeriesAndErrors) {
  LinePlot p;
  p.title = "a < b";
  p.series = {{"s1", {64, 128, 256}, {0.1, 0.5, 0.9}, {}}, {"s2", {64}, {0.3}, {}}};
  p.references = {{"full", 0.95}};
  const std::string svg = line_plot_svg(p);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("a &lt; b"), std::string::npos);
  EXPECT_NE(svg.find(">s2</text>"), std::string::npos);
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 2u);  // one per series; the reference is a dashed line
  p.series[1].x = {0.0};
  expect_error([&] { line_plot_svg(p); }, "x must be > 0");
  p.series[1].x = {1.0, 2.0};
  expect_error([&] { line_plot_svg(p); }, "2 x values, 1 y values");
  p.series[1].x = {64};
  p.series[0].err = {0.1};
  expect_error([&] { line_plot_svg(p); }, "1 error bars, 3 y values");
  // Error bars (a path per bar with a non-zero half-width), byte ticks on a wide x range.
  p.series[0].err = {0.1, 0.0, 0.05};
  p.series[0].x = {1024, 65536, 1048576};
  p.x_bytes = true;
  const std::string bars = line_plot_svg(p);
  size_t paths = 0;
  for (size_t at = bars.find("<path"); at != std::string::npos; at = bars.find("<path", at + 1)) {
    ++paths;
  }
  EXPECT_EQ(paths, 2u);
  EXPECT_NE(bars.find(">1 KiB</text>"), std::string::npos) << bars;
  EXPECT_NE(bars.find(">1 MiB</text>"), std::string::npos) << bars;
  EXPECT_EQ(bars.find(">1024</text>"), std::string::npos) << bars;
}

// On the real model: each policy's generation continues a copy of one dense prefill, and
// equals a session that prefilled the prompt itself; a budget covering the context is full.
// Small passkey tasks on a repeated haystack (each with its question), run to max_new_tokens.
std::vector<Task> question_tasks(const Tokenizer& tok, int count) {
  TaskGenOptions g;
  g.kind = "passkey";
  g.n_ctx = 220;
  g.count = count;
  std::string hay;
  for (int i = 0; i < 300; ++i) hay += "The river ran past mill number " + std::to_string(i) + ". ";
  auto n_tokens = [&](const std::string& p) {
    return static_cast<int64_t>(tok.encode(p, true, false).size());
  };
  std::vector<Task> tasks;
  for (auto& t : generate_tasks(g, hay, "hay", n_tokens, nullptr)) {
    t.task.metric = TaskMetric::Exact;  // runs to max_new_tokens (no early stop)
    t.task.max_new_tokens = 5;
    tasks.push_back(t.task);
  }
  return tasks;
}

TEST(TaskRunner, ForkedGenerationsEqualOwnPrefill) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  auto model = Model::load(path);
  const Tokenizer& tok = model->require_tokenizer();
  std::vector<Task> tasks = question_tasks(tok, 2);
  TaskRunOptions o;
  // The prefill-aware policies take their statistics from the one dense prefill, which watches
  // it for them; snapkv with another window prefills itself (2 prefills per task).
  o.policies = {"full",
                "oracle:budget=100000",
                "streaming:budget=16",
                "snapkv:budget=16,window=4",
                "snapkv:budget=24,window=4",
                "h2o:budget=16",
                "pyramidkv:budget=16,window=4",
                "snapkv:budget=16,window=8",
                "snapkv:budget=24,window=8"};
  o.prefill_chunk = 64;
  const TaskRunResult r = run_tasks(model, tasks, o, nullptr);
  ASSERT_EQ(r.outcome.size(), 2u);
  EXPECT_EQ(r.n_prefills, 4);
  for (size_t i = 0; i < tasks.size(); ++i) {
    SessionOptions so;
    so.n_ctx = r.n_ctx;
    so.prefill_chunk = 64;
    Session own(model, so);
    GenerateOptions go;
    go.n_predict = 5;
    go.sampler.temp = 0.0f;
    const auto want = generate(own, tok.encode(tasks[i].prompt, true, false), go, nullptr);
    EXPECT_EQ(r.outcome[i][0].output, want.text);
    EXPECT_EQ(r.outcome[i][0].n_generated, static_cast<int>(want.tokens.size()));
    EXPECT_EQ(r.outcome[i][1].output, want.text);  // covering budget = full
    EXPECT_EQ(r.outcome[i][0].attn.slots_read, r.outcome[i][0].attn.slots_visible);
    EXPECT_LT(r.outcome[i][2].attn.slots_read, r.outcome[i][2].attn.slots_visible);
    EXPECT_EQ(r.outcome[i][0].score, score_output(TaskMetric::Exact, want.text, tasks[i].answers));
    for (size_t p : {3, 4, 5, 6, 7, 8}) {
      so.policy = o.policies[p];
      Session self(model, so);
      const auto w = generate(self, tok.encode(tasks[i].prompt, true, false), go, nullptr);
      EXPECT_EQ(r.outcome[i][p].output, w.text) << o.policies[p];
      EXPECT_LT(r.outcome[i][p].attn.slots_read, r.outcome[i][p].attn.slots_visible);
    }
  }
  // Tasks in parallel (one thread each) give the same outcomes.
  o.jobs = 2;
  const TaskRunResult par = run_tasks(model, tasks, o, nullptr);
  EXPECT_EQ(par.n_prefills, 4);
  for (size_t i = 0; i < tasks.size(); ++i) {
    for (size_t p = 0; p < o.policies.size(); ++p) {
      EXPECT_EQ(par.outcome[i][p].output, r.outcome[i][p].output) << o.policies[p];
      EXPECT_EQ(par.outcome[i][p].attn.bytes_read(), r.outcome[i][p].attn.bytes_read());
    }
  }
  o.jobs = 1;
  // A resumed run: task 0's outcomes are given (marked, so a rerun would show), only task 1
  // runs, on_task_done reports it alone, and its outcomes equal the whole run's.
  {
    TaskRunResume resume;
    resume.known.resize(tasks.size());
    resume.known[0] = r.outcome[0];
    for (auto& oc : resume.known[0]) oc.output = "from the checkpoint";
    std::vector<size_t> reported;
    resume.on_task_done = [&](size_t i, int n_prompt, const std::vector<TaskOutcome>& outs,
                              double prefill_s) {
      reported.push_back(i);
      EXPECT_EQ(n_prompt, r.n_prompt[i]);
      EXPECT_EQ(outs.size(), o.policies.size());
      EXPECT_GT(prefill_s, 0.0);
    };
    int total = -1;
    const TaskRunResult res = run_tasks(
        model, tasks, o, [&](int, int t) { total = t; }, resume);
    EXPECT_EQ(res.n_known, 1);
    EXPECT_EQ(total, static_cast<int>(o.policies.size()));  // only task 1's generations
    EXPECT_EQ(reported, std::vector<size_t>{1});
    for (size_t p = 0; p < o.policies.size(); ++p) {
      EXPECT_EQ(res.outcome[0][p].output, "from the checkpoint");
      EXPECT_EQ(res.outcome[1][p].output, r.outcome[1][p].output) << o.policies[p];
      EXPECT_EQ(res.outcome[1][p].attn.bytes_read(), r.outcome[1][p].attn.bytes_read());
    }
    resume.known[1] = r.outcome[1];  // everything known: nothing runs
    reported.clear();
    EXPECT_EQ(run_tasks(model, tasks, o, nullptr, resume).n_known, 2);
    EXPECT_TRUE(reported.empty());
    resume.known[1].pop_back();
    expect_error([&] { run_tasks(model, tasks, o, nullptr, resume); },
                 "has 8 known outcomes for 9 policies");
    resume.known.pop_back();
    expect_error([&] { run_tasks(model, tasks, o, nullptr, resume); },
                 "1 known-outcome rows for 2 tasks");
  }
  // A shard (eval sweep --shard): task 0 is another shard's, so it is neither run nor known; the
  // context is still fitted over every task.
  {
    TaskRunResume shard;
    shard.elsewhere = {1, 0};
    int total = -1;
    const TaskRunResult res = run_tasks(
        model, tasks, o, [&](int, int t) { total = t; }, shard);
    EXPECT_TRUE(res.outcome[0].empty());
    EXPECT_EQ(res.n_known, 0);
    EXPECT_EQ(res.n_ctx, r.n_ctx);
    EXPECT_EQ(total, static_cast<int>(o.policies.size()));
    ASSERT_EQ(res.outcome[1].size(), o.policies.size());
    for (size_t p = 0; p < o.policies.size(); ++p) {
      EXPECT_EQ(res.outcome[1][p].output, r.outcome[1][p].output) << o.policies[p];
    }
    shard.elsewhere = {1};
    expect_error([&] { run_tasks(model, tasks, o, nullptr, shard); },
                 "1 elsewhere marks for 2 tasks");
  }
  // With contains, generation stops once the answer is out: same score, never more tokens.
  for (auto& t : tasks) t.metric = TaskMetric::Contains;
  const TaskRunResult c = run_tasks(model, tasks, o, nullptr);
  for (size_t i = 0; i < tasks.size(); ++i) {
    for (size_t p = 0; p < o.policies.size(); ++p) {
      EXPECT_EQ(c.outcome[i][p].score,
                score_output(TaskMetric::Contains, r.outcome[i][p].output, tasks[i].answers));
      EXPECT_LE(c.outcome[i][p].n_generated, r.outcome[i][p].n_generated);
    }
  }
  // A prompt that does not fit, and a bad policy, fail before any work.
  o.n_ctx = 50;
  expect_error([&] { run_tasks(model, tasks, o, nullptr); }, "task 'passkey-220-1-0': ");
  o.n_ctx = 0;
  o.policies = {"streaming"};
  expect_error([&] { run_tasks(model, tasks, o, nullptr); }, "needs a budget");
}

// The question-under-policy protocol: the context is prefilled densely and shared, the
// question's tokens run under each policy as decode steps. Under full it gives the dense-prefill
// protocol's answer bit for bit (a token's output is the same bits prefilled or decoded); under a
// policy it matches a session that prefills the context itself and decodes the question.
TEST(TaskRunner, QuestionUnderPolicyEqualsItsBruteForceProtocol) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  auto model = Model::load(path);
  const Tokenizer& tok = model->require_tokenizer();
  const std::vector<Task> tasks = question_tasks(tok, 2);
  TaskRunOptions o;
  o.policies = {"full", "streaming:budget=16", "snapkv:budget=16,window=4",
                "fasa:calib=online,budget=16"};
  o.prefill_chunk = 64;
  const TaskRunResult dense = run_tasks(model, tasks, o, nullptr);
  o.question_under_policy = true;
  const TaskRunResult r = run_tasks(model, tasks, o, nullptr);
  EXPECT_EQ(r.n_prefills, 2);  // one shared dense prefill of each context
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::vector<int32_t> prompt = tok.encode(tasks[i].prompt, true, false);
    ASSERT_FALSE(tasks[i].question.empty());
    const std::string context_text =
        tasks[i].prompt.substr(0, tasks[i].prompt.size() - tasks[i].question.size());
    const std::vector<int32_t> context = tok.encode(context_text, true, false);
    // The split: the context's own tokens (no token merges across "\n\nWhat is ..."), the
    // question's after them.
    ASSERT_EQ(r.n_prompt[i], static_cast<int>(prompt.size()));
    ASSERT_EQ(r.n_question[i], static_cast<int>(prompt.size() - context.size()));
    EXPECT_GT(r.n_question[i], 5);
    EXPECT_TRUE(std::equal(context.begin(), context.end(), prompt.begin()));
    EXPECT_EQ(dense.n_question[i], 0);
    const std::vector<int32_t> question(prompt.begin() + static_cast<int64_t>(context.size()),
                                        prompt.end());
    GenerateOptions go;
    go.n_predict = 5;
    go.sampler.temp = 0.0f;
    SessionOptions so;
    so.n_ctx = r.n_ctx;
    so.prefill_chunk = 64;
    {  // full: the same logits after the question as after prefilling it, the same answer
      Session whole(model, so);
      whole.prefill(prompt);
      Session split(model, so);
      split.prefill(context);
      for (const int32_t t : question) split.decode(t);
      EXPECT_EQ(split.last_logits(), whole.last_logits());
      EXPECT_EQ(r.outcome[i][0].output, dense.outcome[i][0].output);
      // The question's steps are decode steps: their reads are counted.
      EXPECT_EQ(r.outcome[i][0].attn.decode_tokens,
                dense.outcome[i][0].attn.decode_tokens + question.size());
    }
    for (size_t p = 1; p < o.policies.size(); ++p) {
      so.policy = o.policies[p];
      Session self(model, so);
      const AttnStats before = self.attn_stats();
      self.prefill(context);
      for (const int32_t t : question) self.decode(t);
      const GenerateResult want = generate_from_prefilled(self, go, nullptr);
      EXPECT_EQ(r.outcome[i][p].output, want.text) << o.policies[p];
      EXPECT_EQ(r.outcome[i][p].attn.bytes_read(), (self.attn_stats() - before).bytes_read())
          << o.policies[p];
      EXPECT_LT(r.outcome[i][p].attn.slots_read, r.outcome[i][p].attn.slots_visible);
    }
  }
}

// With --chat, everything from the question on runs under the policy: the question and the chat
// format's closing tokens (end of the user turn, the assistant's header).
TEST(TaskRunner, QuestionUnderPolicyWithChatRunsTheClosingTokensToo) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  auto model = Model::load(path);
  const Tokenizer& tok = model->require_tokenizer();
  const std::vector<Task> tasks = question_tasks(tok, 1);
  TaskRunOptions o;
  o.policies = {"full"};
  o.question_under_policy = true;
  const TaskRunResult plain = run_tasks(model, tasks, o, nullptr);
  o.chat = true;
  const TaskRunResult chat = run_tasks(model, tasks, o, nullptr);
  const std::vector<int32_t> closing =
      tok.encode("<|im_end|>\n<|im_start|>assistant\n", false, true);
  EXPECT_EQ(chat.n_question[0], plain.n_question[0] + static_cast<int>(closing.size()));
}

TEST(TaskRunner, QuestionUnderPolicyRefusesWhatItCannotRun) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  auto model = Model::load(path);
  std::vector<Task> tasks = question_tasks(model->require_tokenizer(), 1);
  TaskRunOptions o;
  o.question_under_policy = true;
  o.lossless.k = 4;
  expect_error([&] { run_tasks(model, tasks, o, nullptr); },
               "--question-under-policy cannot be combined with --lossless");
  o.lossless = {};
  tasks[0].question.clear();
  expect_error([&] { run_tasks(model, tasks, o, nullptr); },
               "task 'passkey-220-1-0' has no \"question\" (--question-under-policy needs one");
  Task choice{"pick", "choice", "The capital of France is", {}, 0, TaskMetric::Choice};
  choice.choices = {" Paris", " Rome"};
  choice.gold = 0;
  expect_error([&] { run_tasks(model, {choice}, o, nullptr); },
               "task 'pick': a choice task has no question to run under the policy");
  o.question_under_policy = false;  // the dense-prefill protocol runs it
  EXPECT_EQ(run_tasks(model, {choice}, o, nullptr).outcome[0].size(), 1u);
}

}  // namespace
}  // namespace fasa
