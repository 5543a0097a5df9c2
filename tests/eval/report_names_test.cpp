// The Markdown reports (results.md, `eval paired`, `eval protocols`) name the model, task file
// and calibration by file name with their sha256, never by a path of the machine; the JSON
// results keep the paths (tools and `eval merge` read them).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fasa/eval/paired.h"
#include "fasa/eval/protocol_compare.h"
#include "fasa/eval/report_names.h"
#include "fasa/eval/sweep.h"

namespace fasa {
namespace {

TEST(ReportNames, FileNameOfAPath) {
  EXPECT_EQ(report_file_name("/home/someone/models/m.gguf"), "m.gguf");
  EXPECT_EQ(report_file_name("runs/a/tasks.jsonl"), "tasks.jsonl");
  EXPECT_EQ(report_file_name("m.gguf"), "m.gguf");
  EXPECT_EQ(report_file_name("online"), "online");
  EXPECT_EQ(report_file_name("/srv/calib/"), "calib");  // a trailing slash
  EXPECT_EQ(report_file_name(""), "-");
  EXPECT_EQ(report_file_name("/"), "/");
}

Task contains_x(const std::string& id, const std::string& kind) {
  Task t;
  t.id = id;
  t.task = kind;
  t.prompt = "p";
  t.answers = {"x"};
  t.max_new_tokens = 4;
  return t;
}

// 2 tasks of 2 kinds under full and streaming at one budget, read from machine paths.
struct PathSweep {
  std::vector<Task> tasks = {contains_x("1", "a"), contains_x("2", "b")};
  std::vector<SweepEntry> entries = sweep_entries({"full", "streaming"}, {"16"}, "");
  TaskRunResult r;
  SweepMeta meta;
  explicit PathSweep(bool question) {
    for (const auto& e : entries) r.policies.push_back(e.spec);
    r.n_prompt = {10, 10};
    r.n_ctx = 32;
    r.outcome.resize(2);
    for (size_t i = 0; i < 2; ++i) {
      for (size_t p = 0; p < 2; ++p) {
        TaskOutcome o;
        o.score = o.partial = (i + p) % 2;
        o.attn.decode_tokens = 2;
        o.attn.attend_bytes = 4096;
        r.outcome[i].push_back(o);
      }
    }
    meta.model = "/home/someone/.cache/fasa/models/smollm2/SmolLM2-135M.gguf";
    meta.model_sha256 = "b179c9523d0e6a0f0123456789";
    meta.tasks_file = "/tmp/work/tasks/passkey.jsonl";
    meta.tasks_sha256 = "cc";
    meta.calib = "/home/someone/.cache/fasa/calib/smol.json";
    meta.calib_sha256 = "dd00112233445566778899";
    meta.version = "0.6.0";
    meta.question_under_policy = question;
  }
  std::string json() const { return sweep_json(meta, tasks, entries, r); }
};

void expect_no_machine_path(const std::string& md) {
  for (const char* path : {"/home/", "/tmp/", "/.cache/", "smollm2/"}) {
    EXPECT_EQ(md.find(path), std::string::npos) << path << " in\n" << md;
  }
}

TEST(ReportNames, ResultsMdNamesFilesNotPaths) {
  const PathSweep w(false);
  const std::string md = sweep_markdown(w.meta, w.tasks, w.entries, w.r);
  EXPECT_NE(md.find("model `SmolLM2-135M.gguf` (sha256 `b179c9523d0e6a0f`)"), std::string::npos)
      << md;
  EXPECT_NE(md.find("tasks `passkey.jsonl` (2 tasks, 2 kinds)"), std::string::npos) << md;
  EXPECT_NE(md.find("calibration `smol.json` (sha256 `dd00112233445566`)"), std::string::npos)
      << md;
  expect_no_machine_path(md);
  // results.json keeps the paths beside the sha256s.
  const auto j = nlohmann::json::parse(w.json());
  EXPECT_EQ(j["model"], w.meta.model);
  EXPECT_EQ(j["model_sha256"], w.meta.model_sha256);
  EXPECT_EQ(j["tasks_file"], w.meta.tasks_file);
  EXPECT_EQ(j["calib"], w.meta.calib);
  // No calibration: a dash, no sha256.
  PathSweep none(false);
  none.meta.calib.clear();
  none.meta.calib_sha256.clear();
  EXPECT_NE(sweep_markdown(none.meta, none.tasks, none.entries, none.r).find("calibration `-`;"),
            std::string::npos);
}

TEST(ReportNames, ComparisonsNameFilesNotPaths) {
  const PathSweep d(false), q(true);
  const SweepScores s = read_sweep_scores(nlohmann::json::parse(d.json()), "runs/d/results.json");
  const std::string paired =
      paired_markdown(s, "full", "streaming", paired_rows(s, "full", "streaming"));
  EXPECT_NE(paired.find("model `SmolLM2-135M.gguf` (sha256 `b179c9523d0e6a0f`)"), std::string::npos)
      << paired;
  EXPECT_NE(paired.find("tasks `passkey.jsonl`"), std::string::npos) << paired;
  expect_no_machine_path(paired);
  const ProtocolComparison c =
      compare_protocols({nlohmann::json::parse(d.json()), "runs/d/results.json"},
                        {nlohmann::json::parse(q.json()), "runs/q/results.json"});
  const std::string protocols = protocol_markdown(c);
  EXPECT_NE(protocols.find("model `SmolLM2-135M.gguf` (sha256 `b179c9523d0e6a0f`), tasks "
                           "`passkey.jsonl`"),
            std::string::npos)
      << protocols;
  expect_no_machine_path(protocols);
  EXPECT_EQ(nlohmann::json::parse(protocol_json(c))["model"], d.meta.model);  // JSON: the path
}

}  // namespace
}  // namespace fasa
