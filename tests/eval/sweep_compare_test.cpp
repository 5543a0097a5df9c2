// Comparisons of finished sweeps: `fasa eval protocols` (two sweeps of the same tasks, one per
// protocol, paired per setting) and `fasa eval paired` (two settings of one sweep).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fasa/eval/confidence.h"
#include "fasa/eval/paired.h"
#include "fasa/eval/protocol_compare.h"
#include "fasa/eval/sweep.h"
#include "support/expect_error.h"

namespace fasa {
namespace {

using test::expect_error;

// 4 tasks of 2 kinds under full and streaming:budget=16; scores [task][setting].
struct Sweep {
  std::vector<Task> tasks;
  std::vector<SweepEntry> entries;
  TaskRunResult r;
  SweepMeta meta;
  Sweep(const double (&s)[4][2], bool question) {
    tasks = {{"1", "kind-a", "p", {"x"}, 4, TaskMetric::Contains},
             {"2", "kind-a", "p", {"x"}, 4, TaskMetric::Contains},
             {"3", "kind-b", "p", {"x"}, 4, TaskMetric::Contains},
             {"4", "kind-b", "p", {"x"}, 4, TaskMetric::Contains}};
    entries = sweep_entries({"full", "streaming"}, {"16"}, "");
    for (const auto& e : entries) r.policies.push_back(e.spec);
    r.n_prompt = {10, 11, 12, 13};
    r.n_ctx = 32;
    r.outcome.resize(4);
    for (int i = 0; i < 4; ++i) {
      for (int p = 0; p < 2; ++p) {
        TaskOutcome o;
        o.score = o.partial = s[i][p];
        o.attn.decode_tokens = question ? 4 : 2;
        o.attn.attend_bytes = 2048 * (p + 1) * o.attn.decode_tokens;
        r.outcome[i].push_back(o);
      }
    }
    meta.model = "m.gguf";
    meta.model_sha256 = "aa";
    meta.tasks_file = "t.jsonl";
    meta.tasks_sha256 = "bb";
    meta.version = question ? "0.6.0 (q)" : "0.6.0 (d)";
    meta.question_under_policy = question;
  }
  ProtocolSweep sweep(const std::string& source) const {
    return {nlohmann::json::parse(sweep_json(meta, tasks, entries, r)), source};
  }
};

// A sweep's ms/token is each setting's generation time over its generated tokens, summed over
// the tasks (not a mean of per-task rates), beside the bytes; results.md has the column.
TEST(SweepStats, DecodeMsPerTokenIsTimeOverTokens) {
  const double s[4][2] = {{1, 1}, {1, 1}, {1, 1}, {1, 1}};
  Sweep w(s, false);
  for (int i = 0; i < 4; ++i) {
    w.r.outcome[i][0].n_generated = 1 + i;  // 10 tokens in 100 ms
    w.r.outcome[i][0].decode_ms = 10.0 * (1 + i);
    w.r.outcome[i][1].n_generated = i == 0 ? 4 : 0;  // 4 tokens in 31 ms + 3 ms of no tokens
    w.r.outcome[i][1].decode_ms = i == 0 ? 31.0 : 1.0;
  }
  const std::vector<SweepRowStats> st = sweep_row_stats(w.tasks, w.r);
  EXPECT_DOUBLE_EQ(st[0].decode_ms_per_token, 10.0);
  EXPECT_DOUBLE_EQ(st[1].decode_ms_per_token, 34.0 / 4.0);
  const auto j = nlohmann::json::parse(sweep_json(w.meta, w.tasks, w.entries, w.r));
  EXPECT_DOUBLE_EQ(j["results"][1]["decode_ms_per_token"].get<double>(), 34.0 / 4.0);
  const std::string md = sweep_markdown(w.meta, w.tasks, w.entries, w.r);
  EXPECT_NE(md.find("| KV read/token | ms/token | KV resident |"), std::string::npos);
  EXPECT_NE(md.find("| 8.5 |"), std::string::npos) << md;
}

const double kDense[4][2] = {{1, 1}, {1, 1}, {1, 0}, {0, 1}};
const double kQuestion[4][2] = {{1, 0}, {1, 1}, {1, 0}, {0, 0}};

TEST(ProtocolCompare, PairsEachSettingOverTheSameTasks) {
  const Sweep d(kDense, false), q(kQuestion, true);
  // Either order: the protocols say which is which.
  for (const bool swap : {false, true}) {
    const ProtocolComparison c = swap ? compare_protocols(q.sweep("q"), d.sweep("d"))
                                      : compare_protocols(d.sweep("d"), q.sweep("q"));
    EXPECT_EQ(c.dense_source, "d");
    EXPECT_EQ(c.question_source, "q");
    EXPECT_EQ(c.question_version, "0.6.0 (q)");
    EXPECT_EQ(c.kinds, (std::vector<std::string>{"kind-a", "kind-b"}));
    ASSERT_EQ(c.rows.size(), 2u);
    EXPECT_EQ(c.rows[0].spec, "full");
    EXPECT_DOUBLE_EQ(c.rows[0].diff, 0.0);
    EXPECT_EQ(c.rows[0].lost + c.rows[0].gained, 0);
    const ProtocolRow& s = c.rows[1];
    EXPECT_EQ(s.spec, "streaming:budget=16");
    EXPECT_DOUBLE_EQ(s.budget, 16.0);
    EXPECT_DOUBLE_EQ(s.dense, 0.75);     // kind-a 1, kind-b 0.5
    EXPECT_DOUBLE_EQ(s.question, 0.25);  // kind-a 0.5, kind-b 0
    EXPECT_DOUBLE_EQ(s.diff, -0.5);
    EXPECT_EQ(s.kind_diff, (std::vector<double>{-0.5, -0.5}));
    EXPECT_DOUBLE_EQ(s.diff_ci95, ci95_half_width({{-1.0, 0.0}, {0.0, -1.0}}));
    EXPECT_EQ(s.lost, 2);
    EXPECT_EQ(s.gained, 0);
    EXPECT_DOUBLE_EQ(s.dense_bytes, 4096.0);
    EXPECT_DOUBLE_EQ(s.question_bytes, 4096.0);
    const std::string md = protocol_markdown(c);
    EXPECT_NE(md.find("| streaming:budget=16 | 16 | 0.750 | 0.250 | -0.500 | ["), std::string::npos)
        << md;
    EXPECT_NE(md.find("| 2 | 0 | -0.50 | -0.50 | 4 KiB | 4 KiB |"), std::string::npos) << md;
    const auto j = nlohmann::json::parse(protocol_json(c));
    EXPECT_DOUBLE_EQ(j["rows"][1]["diff_by_task"]["kind-b"].get<double>(), -0.5);
  }
}

TEST(ProtocolCompare, RefusesWhatIsNotOneSweepOfEachProtocol) {
  const Sweep d(kDense, false), q(kQuestion, true);
  expect_error([&] { compare_protocols(d.sweep("a"), d.sweep("b")); },
               "a and b both ran the dense-prefill protocol: give one sweep of each");
  // A results.json written before the protocol was recorded is a dense-prefill sweep.
  ProtocolSweep old = d.sweep("old");
  old.doc.erase("protocol");
  EXPECT_EQ(compare_protocols(q.sweep("q"), old).dense_source, "old");
  Sweep other(kQuestion, true);
  other.meta.tasks_sha256 = "cc";
  expect_error([&] { compare_protocols(d.sweep("d"), other.sweep("o")); },
               "the two sweeps differ in tasks_sha256: d has bb, o has cc");
  other = Sweep(kQuestion, true);
  other.meta.model_sha256 = "zz";
  expect_error([&] { compare_protocols(d.sweep("d"), other.sweep("o")); },
               "differ in model_sha256");
  other = Sweep(kQuestion, true);
  other.entries = sweep_entries({"oracle"}, {"8", "16"}, "");
  other.r.policies = {"oracle:budget=8", "oracle:budget=16"};
  expect_error([&] { compare_protocols(d.sweep("d"), other.sweep("o")); },
               "d and o have no setting in common");
  ProtocolSweep bad = q.sweep("bad");
  bad.doc["protocol"] = "sparse";
  expect_error([&] { compare_protocols(d.sweep("d"), bad); },
               "bad: field \"protocol\" must be \"dense-prefill\" or \"question-under-policy\"");
  bad = q.sweep("bad");
  bad.doc["items"].erase(bad.doc["items"].begin());
  expect_error([&] { compare_protocols(d.sweep("d"), bad); },
               "bad: setting 'full' has 3 items for 4 tasks");
  bad = q.sweep("bad");
  bad.doc.erase("items");
  expect_error([&] { compare_protocols(d.sweep("d"), bad); }, "bad: ");
}

TEST(Paired, SignTestIsTheExactBinomialTail) {
  EXPECT_DOUBLE_EQ(sign_test_p(0, 0), 1.0);
  EXPECT_NEAR(sign_test_p(5, 0), 2.0 / 32.0, 1e-12);
  EXPECT_NEAR(sign_test_p(0, 5), 2.0 / 32.0, 1e-12);
  EXPECT_DOUBLE_EQ(sign_test_p(1, 1), 1.0);
  EXPECT_NEAR(sign_test_p(10, 2), 2.0 * (1 + 12 + 66) / 4096.0, 1e-12);
  EXPECT_LT(sign_test_p(300, 200), 1e-4);
}

TEST(Paired, PairsTwoLabelsBudgetByBudget) {
  const Sweep d(kDense, false);
  const SweepScores s = read_sweep_scores(d.sweep("d").doc, "d");
  EXPECT_EQ(s.label.at("streaming:budget=16"), "streaming");
  // full has no budget: it pairs with each of streaming's.
  const std::vector<PairedRow> rows = paired_rows(s, "full", "streaming");
  ASSERT_EQ(rows.size(), 1u);
  const PairedRow& r = rows[0];
  EXPECT_EQ(r.a_spec, "full");
  EXPECT_EQ(r.b_spec, "streaming:budget=16");
  EXPECT_DOUBLE_EQ(r.budget, 16.0);
  EXPECT_DOUBLE_EQ(r.a, 0.75);  // kind-a 1, kind-b 0.5
  EXPECT_DOUBLE_EQ(r.b, 0.75);  // kind-a 1, kind-b 0.5, on other tasks
  EXPECT_DOUBLE_EQ(r.diff, 0.0);
  EXPECT_EQ(r.a_wins, 1);  // task 3
  EXPECT_EQ(r.b_wins, 1);  // task 4
  EXPECT_DOUBLE_EQ(r.p_sign, 1.0);
  EXPECT_DOUBLE_EQ(r.diff_ci95, ci95_half_width({{0.0, 0.0}, {1.0, -1.0}}));
  EXPECT_DOUBLE_EQ(r.a_bytes, 2048.0);
  EXPECT_DOUBLE_EQ(r.b_bytes, 4096.0);
  const std::string md = paired_markdown(s, "full", "streaming", rows);
  EXPECT_NE(md.find("| 16 | 0.750 | 0.750 | +0.000 | ["), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | 1 | 1 | +0.00 | +0.00 | 2 KiB | 4 KiB |"), std::string::npos) << md;
  EXPECT_EQ(nlohmann::json::parse(paired_json(s, "full", "streaming", rows))["rows"][0]["a_wins"],
            1);
  expect_error([&] { paired_rows(s, "fasa", "full"); },
               "d: no setting labelled 'fasa' (its labels: full, streaming)");
}

}  // namespace
}  // namespace fasa
