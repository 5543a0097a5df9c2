// `fasa eval sweep --question-under-policy`, `fasa eval protocols` and `fasa eval paired`: one
// sweep per protocol on the tiny model, resumed only under its own protocol, paired side by side,
// and two settings of one sweep paired; bad input is one clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

namespace fs = std::filesystem;
using test::expect_clean_error;
using test::fresh_dir;
using test::run_cli;
using test::slurp;

// Tasks whose prompts end in a question (the "question" field is the prompt's tail).
std::string write_tasks(const fs::path& path, int n, bool with_question) {
  std::ofstream f(path);
  for (int i = 0; i < n; ++i) {
    nlohmann::ordered_json j;
    j["id"] = "t" + std::to_string(i);
    j["task"] = i % 2 ? "recall" : "count";
    std::string context;
    for (int w = 0; w < 30; ++w) context += "word" + std::to_string((w * 7 + i * 13) % 23) + " ";
    const std::string question = "\nwhich word came first? it was";
    j["prompt"] = context + question;
    if (with_question) j["question"] = question;
    j["answers"] = {std::string(1, static_cast<char>('a' + i % 26))};
    j["max_new_tokens"] = 4;
    j["metric"] = "contains";
    f << j.dump() << "\n";
  }
  return path.string();
}

TEST(CliProtocols, OneSweepPerProtocolSideBySide) {
  const fs::path d = fresh_dir("protocols_cli");
  test::TinySpec spec;
  spec.byte_tokenizer = true;
  const std::string model = (d / "tiny.gguf").string();
  test::write_tiny_model(model, spec);
  const std::string tasks = write_tasks(d / "tasks.jsonl", 4, true);
  auto sweep = [&](const fs::path& out, const std::vector<std::string>& more) {
    std::vector<std::string> a = {"eval",      "sweep",     "-m",         model,
                                  "--tasks",   tasks,       "--policies", "full,streaming",
                                  "--budgets", "16",        "-t",         "1",
                                  "-o",        out.string()};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const fs::path dense = d / "dense", question = d / "question";
  auto r = run_cli(sweep(dense, {}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli(sweep(question, {"--question-under-policy"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto jd = nlohmann::json::parse(slurp(dense / "results.json"));
  const auto jq = nlohmann::json::parse(slurp(question / "results.json"));
  EXPECT_EQ(jd["protocol"], "dense-prefill");
  EXPECT_EQ(jq["protocol"], "question-under-policy");
  EXPECT_FALSE(jd["items"][0].contains("n_question"));
  EXPECT_EQ(jq["items"][0]["n_question"], 30);  // byte tokens: one per byte of the question
  EXPECT_NE(slurp(question / "results.md").find("Protocol: **question under the policy**"),
            std::string::npos);

  r = run_cli({"eval", "protocols", question.string(), dense.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Dense prefill: `" + (dense / "results.json").string()), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| full | - | "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| streaming:budget=16 | 16 | "), std::string::npos) << r.out;
  r = run_cli(
      {"eval", "protocols", (dense / "results.json").string(), question.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["rows"].size(), 2u);

  expect_clean_error(run_cli({"eval", "protocols", dense.string(), dense.string()}),
                     "both ran the dense-prefill protocol");
  expect_clean_error(run_cli({"eval", "protocols", dense.string(), (d / "none").string()}), "none");
  expect_clean_error(run_cli({"eval", "protocols", (d / "tasks.jsonl").string(), dense.string()}),
                     "tasks.jsonl");
  expect_clean_error(run_cli({"eval", "protocols", dense.string()}), "sweeps");

  // Two settings of one sweep, paired.
  r = run_cli({"eval", "paired", question.string(), "full", "streaming"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("protocol question-under-policy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n| 16 | "), std::string::npos) << r.out;
  r = run_cli({"eval", "paired", dense.string(), "streaming", "full", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["rows"][0]["a_spec"], "streaming:budget=16");
  expect_clean_error(run_cli({"eval", "paired", dense.string(), "fasa", "full"}),
                     "no setting labelled 'fasa' (its labels: full, streaming)");
  expect_clean_error(run_cli({"eval", "paired", (d / "none").string(), "full", "streaming"}),
                     "none");

  // A task without its question is refused by name under the flag; a question that is not its
  // prompt's tail when the file is read.
  const std::string bare = write_tasks(d / "bare.jsonl", 2, false);
  expect_clean_error(run_cli({"eval", "tasks", "-m", model, "--tasks", bare,
                              "--question-under-policy"}),
                     "task 't0' has no \"question\"");
  expect_clean_error(run_cli({"eval", "tasks", "-m", model, "--tasks", tasks, "--lossless", "2",
                              "--question-under-policy"}),
                     "cannot be combined with --lossless");
}

// A shard's checkpoint resumes only under the protocol that wrote it.
TEST(CliProtocols, ResumeKeepsTheProtocol) {
  const fs::path d = fresh_dir("protocols_resume_cli");
  test::TinySpec spec;
  spec.byte_tokenizer = true;
  const std::string model = (d / "tiny.gguf").string();
  test::write_tiny_model(model, spec);
  const std::string tasks = write_tasks(d / "tasks.jsonl", 2, true);
  std::vector<std::string> a = {"eval",
                                "sweep",
                                "-m",
                                model,
                                "--tasks",
                                tasks,
                                "--policies",
                                "full",
                                "-t",
                                "1",
                                "--shard",
                                "0/2",
                                "-o",
                                (d / "out").string(),
                                "--question-under-policy"};
  auto r = run_cli(a);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  a.push_back("--resume");
  r = run_cli(a);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 tasks done (1 from the checkpoint)"), std::string::npos) << r.out;
  a.erase(a.end() - 2);  // --question-under-policy
  expect_clean_error(run_cli(a),
                     "it was written for the protocol question-under-policy "
                     "(--question-under-policy)");
}

}  // namespace
}  // namespace fasa
