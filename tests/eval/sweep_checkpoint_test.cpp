// A sweep's checkpoint: lines round-trip exactly, a checkpoint of other settings or a damaged one
// is refused with the line and field named, and a line cut short by a crash is dropped.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fasa/eval/sweep_checkpoint.h"
#include "support/expect_error.h"

namespace fasa {
namespace {

using test::expect_error;

std::vector<Task> three_tasks() {
  return {{"a", "passkey", "p", {"1"}, 4, TaskMetric::Contains},
          {"b", "passkey", "p", {"2"}, 4, TaskMetric::Contains},
          {"c", "qa", "p", {"3"}, 4, TaskMetric::Exact}};
}

SweepIdentity identity() {
  SweepIdentity id;
  id.model_sha256 = "aa11";
  id.calib_sha256 = "bb22";
  id.tasks_sha256 = "cc33";
  id.kv_type = "f16";
  id.n_tasks = 3;
  id.n_ctx = 0;
  id.chat = false;
  id.policies = {"full", "fasa:budget=64,calib=c.json"};
  return id;
}

TaskDone done_task(size_t i, const std::string& id) {
  TaskDone d;
  d.task = i;
  d.id = id;
  d.n_prompt = 100 + static_cast<int>(i);
  d.prefill_seconds = 1.25 + static_cast<double>(i);
  for (int p = 0; p < 2; ++p) {
    TaskOutcome o;
    o.output = "line one\nde \"quoted\" \xc3\xa9t\xc3\xa9 " + std::to_string(p);
    o.score = p == 0 ? 1.0 : 1.0 / 3.0;
    o.n_generated = 7 + p;
    o.decode_ms = 12.345678901234;
    AttnStats& a = o.attn;
    a.decode_tokens = 1;
    a.decode_steps = 2;
    a.slots_read = 3;
    a.slots_visible = 4;
    a.window_slots = 5;
    a.select_bytes = 6;
    a.attend_bytes = 7;
    a.dense_bytes = 8;
    a.window_bytes = 9;
    a.tier_reads = 10;
    a.tier_read_bytes = 11;
    a.tier_read_ns = (1ull << 40) + 12;
    o.kv_resident_bytes = (1ull << 41) + 13 + p;
    d.outcomes.push_back(o);
  }
  return d;
}

void expect_same(const TaskDone& a, const TaskDone& b) {
  EXPECT_EQ(a.task, b.task);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.n_prompt, b.n_prompt);
  EXPECT_EQ(a.prefill_seconds, b.prefill_seconds);
  EXPECT_EQ(a.fasa_version, b.fasa_version);
  ASSERT_EQ(a.outcomes.size(), b.outcomes.size());
  for (size_t p = 0; p < a.outcomes.size(); ++p) {
    const TaskOutcome &x = a.outcomes[p], &y = b.outcomes[p];
    EXPECT_EQ(x.output, y.output);
    EXPECT_EQ(x.score, y.score);  // exactly: doubles round-trip
    EXPECT_EQ(x.n_generated, y.n_generated);
    EXPECT_EQ(x.decode_ms, y.decode_ms);
    EXPECT_EQ(x.attn.decode_tokens, y.attn.decode_tokens);
    EXPECT_EQ(x.attn.decode_steps, y.attn.decode_steps);
    EXPECT_EQ(x.attn.slots_read, y.attn.slots_read);
    EXPECT_EQ(x.attn.slots_visible, y.attn.slots_visible);
    EXPECT_EQ(x.attn.window_slots, y.attn.window_slots);
    EXPECT_EQ(x.attn.select_bytes, y.attn.select_bytes);
    EXPECT_EQ(x.attn.attend_bytes, y.attn.attend_bytes);
    EXPECT_EQ(x.attn.dense_bytes, y.attn.dense_bytes);
    EXPECT_EQ(x.attn.window_bytes, y.attn.window_bytes);
    EXPECT_EQ(x.attn.tier_reads, y.attn.tier_reads);
    EXPECT_EQ(x.attn.tier_read_bytes, y.attn.tier_read_bytes);
    EXPECT_EQ(x.attn.tier_read_ns, y.attn.tier_read_ns);
    EXPECT_EQ(x.kv_resident_bytes, y.kv_resident_bytes);
  }
}

std::string checkpoint_text(const std::vector<TaskDone>& done) {
  std::string s = checkpoint_header_line(identity()) + "\n";
  for (const TaskDone& d : done) s += checkpoint_task_line(d) + "\n";
  return s;
}

TEST(SweepCheckpoint, LinesRoundTripExactly) {
  std::vector<TaskDone> in = {done_task(2, "c"), done_task(0, "a")};
  in[0].fasa_version = "0.6.0 (abcdef1)";  // in[1]: none recorded (an older line)
  const auto out = parse_checkpoint(checkpoint_text(in), "ck", identity(), three_tasks());
  ASSERT_EQ(out.size(), 2u);
  expect_same(out[0], in[0]);  // file order, which is the order tasks finished
  expect_same(out[1], in[1]);
  // A header alone: nothing done.
  EXPECT_TRUE(parse_checkpoint(checkpoint_text({}), "ck", identity(), three_tasks()).empty());
}

// The partial credit is not stored but recomputed from the output with the task's metric; a
// line written before resident bytes were recorded reads them back as 0 (not recorded).
TEST(SweepCheckpoint, PartialCreditIsRecomputedResidentBytesMayBeAbsent) {
  std::vector<Task> tasks = three_tasks();
  tasks[1].metric = TaskMetric::All;
  tasks[1].answers = {"line", "zebra", "one"};
  TaskDone d = done_task(1, "b");
  auto line = nlohmann::json::parse(checkpoint_task_line(d));
  EXPECT_FALSE(line["outcomes"][0].contains("partial"));
  line["outcomes"][1].erase("kv_resident_bytes");
  const std::string text = checkpoint_header_line(identity()) + "\n" + line.dump() + "\n";
  const auto out = parse_checkpoint(text, "ck", identity(), tasks);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_DOUBLE_EQ(out[0].outcomes[0].partial, 2.0 / 3.0);  // "line", "one"; not "zebra"
  EXPECT_EQ(out[0].outcomes[0].kv_resident_bytes, (1ull << 41) + 13);
  EXPECT_EQ(out[0].outcomes[1].kv_resident_bytes, 0u);
}

// Tasks of another build, or of one that did not record itself, are refused unless mixing is
// asked for (the caller skips the check).
TEST(SweepCheckpoint, TasksOfAnotherBuildAreRefused) {
  std::vector<TaskDone> done = {done_task(0, "a"), done_task(1, "b")};
  done[0].fasa_version = done[1].fasa_version = "0.6.0 (abcdef1)";
  check_same_build(done, "0.6.0 (abcdef1)", "ck");  // the same build: fine
  check_same_build({}, "0.6.0 (abcdef1)", "ck");
  done[1].fasa_version = "0.6.0 (1234567-dirty)";
  expect_error([&] { check_same_build(done, "0.6.0 (abcdef1)", "ck"); },
               "ck: task 'b' was run by fasa 0.6.0 (1234567-dirty), this is fasa 0.6.0 (abcdef1)");
  done[1].fasa_version.clear();
  expect_error([&] { check_same_build(done, "0.6.0 (abcdef1)", "ck"); },
               "task 'b' was run by a build that did not record itself");
}

TEST(SweepCheckpoint, OtherSettingsAreRefusedByName) {
  const std::string text = checkpoint_text({done_task(0, "a")});
  auto refused = [&](auto change, const std::string& field) {
    SweepIdentity want = identity();
    change(want);
    expect_error([&] { parse_checkpoint(text, "ck.jsonl", want, three_tasks()); },
                 "it was written for " + field + " = ");
  };
  refused([](SweepIdentity& w) { w.model_sha256 = "zz"; }, "model_sha256");
  refused([](SweepIdentity& w) { w.calib_sha256 = ""; }, "calib_sha256");
  refused([](SweepIdentity& w) { w.tasks_sha256 = "zz"; }, "tasks_sha256");
  refused([](SweepIdentity& w) { w.kv_type = "f32"; }, "kv_type");
  refused([](SweepIdentity& w) { w.n_ctx = 4096; }, "n_ctx");
  refused([](SweepIdentity& w) { w.chat = true; }, "chat");
  refused([](SweepIdentity& w) { w.policies.push_back("oracle:budget=64"); }, "policies");
  refused(
      [](SweepIdentity& w) {
        w.policies = {"fasa:budget=64,calib=c.json", "full"};
      },
      "policies");
  // The protocol: a question-under-policy checkpoint resumes only with the flag, and a dense one
  // only without it.
  SweepIdentity question = identity();
  question.question_under_policy = true;
  EXPECT_EQ(parse_checkpoint(checkpoint_header_line(question) + "\n", "ck", question, three_tasks())
                .size(),
            0u);
  expect_error([&] { parse_checkpoint(text, "ck", question, three_tasks()); },
               "ck: it was written for the dense-prefill protocol (no --question-under-policy)");
  expect_error(
      [&] {
        parse_checkpoint(checkpoint_header_line(question) + "\n", "ck", identity(), three_tasks());
      },
      "ck: it was written for the protocol question-under-policy (--question-under-policy)");
  expect_error([&] { parse_checkpoint("{\"format\":\"x\"}\n", "ck", identity(), three_tasks()); },
               "ck: line 1 is not a fasa sweep checkpoint header");
  expect_error([&] { parse_checkpoint("", "ck", identity(), three_tasks()); }, "empty");
}

TEST(SweepCheckpoint, DamagedLinesAreNamedACutShortLastLineIsDropped) {
  const std::string good = checkpoint_text({done_task(0, "a")});
  // The process died while writing task 1's line: it has no newline and is dropped.
  const std::string line1 = checkpoint_task_line(done_task(1, "b"));
  auto out =
      parse_checkpoint(good + line1.substr(0, line1.size() / 2), "ck", identity(), three_tasks());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, "a");
  // The whole line, without its newline, is dropped too (its write may not have finished).
  EXPECT_EQ(parse_checkpoint(good + line1, "ck", identity(), three_tasks()).size(), 1u);
  auto bad = [&](const std::string& extra, const std::string& needle) {
    expect_error([&] { parse_checkpoint(good + extra + "\n", "ck", identity(), three_tasks()); },
                 needle);
  };
  bad("{not json", "ck: line 3: not valid JSON (");
  expect_error(
      [&] {  // a line cut short inside the file (not the last one): an error
        parse_checkpoint(good.substr(0, good.size() - 9) + "\n" + line1 + "\n", "ck", identity(),
                         three_tasks());
      },
      "ck: line 2: not valid JSON (");
  bad("[1,2]", "ck: line 3: expected a JSON object");
  bad(checkpoint_task_line(done_task(0, "a")), "line 3: task 0 is there twice");
  bad(checkpoint_task_line(done_task(1, "x")), "line 3: task 1 has id 'x', the task file's is 'b'");
  bad(checkpoint_task_line(done_task(3, "d")),
      "ck: line 3: field \"task\" must be an integer in [0, 2] (got 3)");
  TaskDone one = done_task(1, "b");
  one.outcomes.pop_back();
  bad(checkpoint_task_line(one), "line 3: task 1 has 1 outcomes for 2 policies");
  std::string no_score = checkpoint_task_line(done_task(1, "b"));
  no_score.replace(no_score.find("\"score\""), 7, "\"scorX\"");
  bad(no_score, "ck: line 3: missing field \"outcomes[0].score\"");
  // Every number is range-checked, naming the field.
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string line = checkpoint_task_line(done_task(1, "b"));
    const size_t at = line.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return line.replace(at, from.size(), to);
  };
  bad(edited("\"task\":1", "\"task\":-1"), "field \"task\" must be an integer in [0, 2] (got -1)");
  bad(edited("\"task\":1", "\"task\":1.5"), "field \"task\" must be an integer");
  bad(edited("\"n_prompt\":101", "\"n_prompt\":3e9"),
      "ck: line 3: field \"n_prompt\" must be an integer in [0, 1073741824] (got 3000000000.0)");
  bad(edited("\"n_prompt\":101", "\"n_prompt\":\"101\""), "field \"n_prompt\" must be an integer");
  bad(edited("\"score\":1.0", "\"score\":2"),
      "field \"outcomes[0].score\" must be a number in [0, 1]");
  bad(edited("\"decode_tokens\":1", "\"decode_tokens\":-1"),
      "field \"outcomes[0].attn.decode_tokens\" must be an integer in [0, 18446744073709551615] "
      "(got -1)");
  bad(edited("\"prefill_seconds\":2.25", "\"prefill_seconds\":-2"),
      "field \"prefill_seconds\" must be a number");
  bad(edited("\"outcomes\":[", "\"outcomes\":3,\"x\":["), "field \"outcomes\" must be an array");
  bad(edited("\"id\":\"b\"", "\"id\":2"), "field \"id\" must be a string (got 2)");
  // The dropped cut-short last line is measured (the caller warns).
  size_t dropped = 0;
  parse_checkpoint(good + "{\"task\": 2", "ck", identity(), three_tasks(), &dropped);
  EXPECT_EQ(dropped, 10u);
  parse_checkpoint(good, "ck", identity(), three_tasks(), &dropped);
  EXPECT_EQ(dropped, 0u);
}

// The header: a missing or mistyped "version" (undefined behaviour in the JSON library before)
// or any other field is one clear error.
TEST(SweepCheckpoint, DamagedHeaderIsNamed) {
  auto header = [](const std::function<void(nlohmann::ordered_json&)>& edit) {
    nlohmann::ordered_json h = nlohmann::ordered_json::parse(checkpoint_header_line(identity()));
    edit(h);
    return h.dump() + "\n";
  };
  auto bad = [&](const std::string& text, const std::string& needle) {
    expect_error([&] { parse_checkpoint(text, "ck", identity(), three_tasks()); }, needle);
  };
  bad(header([](auto& h) { h.erase("version"); }), "ck: line 1: missing field \"version\"");
  bad(header([](auto& h) { h["version"] = "1"; }),
      "ck: line 1: field \"version\" must be an integer");
  bad(header([](auto& h) { h["version"] = 2; }),
      "ck: checkpoint version 2 (this fasa reads version 1)");
  bad(header([](auto& h) { h["format"] = 5; }), "ck: line 1 is not a fasa sweep checkpoint header");
  bad(header([](auto& h) { h.erase("n_ctx"); }), "ck: the header has no 'n_ctx'");
  bad(header([](auto& h) { h["chat"] = 0; }), "it was written for chat = 0");
  bad("{\"format\": \"fasa-sweep-checkpoint\", \"vers", "ck: line 1: not valid JSON (");
  bad("[]\n", "ck: line 1 is not a fasa sweep checkpoint header");
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SweepCheckpoint, FileRefusesAnUnfinishedSweepUnlessResumedAndAppendsCleanLines) {
  const std::string path = ::testing::TempDir() + "/fasa_ckpt_test.jsonl";
  std::filesystem::remove(path);
  {
    CheckpointFile f(path, identity(), three_tasks(), /*resume=*/false);
    EXPECT_TRUE(f.done().empty());
    f.append(done_task(1, "b"));
  }
  expect_error([&] { CheckpointFile(path, identity(), three_tasks(), false); },
               "holds the checkpoint of an unfinished sweep: add --resume");
  {  // a crash mid-line, then a resume: the partial line goes, new lines start clean
    std::ofstream(path, std::ios::app) << "{\"task\": 2, \"id\": \"c\", \"n_pro";
  }
  {
    CheckpointFile f(path, identity(), three_tasks(), /*resume=*/true);
    ASSERT_EQ(f.done().size(), 1u);
    expect_same(f.done()[0], done_task(1, "b"));
    f.append(done_task(2, "c"));
  }
  const auto back = parse_checkpoint(read_all(path), path, identity(), three_tasks());
  ASSERT_EQ(back.size(), 2u);
  expect_same(back[1], done_task(2, "c"));
  {  // settings changed: refused, and the file is left as it was
    SweepIdentity other = identity();
    other.kv_type = "f32";
    expect_error([&] { CheckpointFile(path, other, three_tasks(), true); }, "kv_type");
    EXPECT_EQ(parse_checkpoint(read_all(path), path, identity(), three_tasks()).size(), 2u);
  }
  {
    CheckpointFile f(path, identity(), three_tasks(), true);
    f.remove_if_empty();  // it is not empty: kept
    EXPECT_TRUE(std::filesystem::exists(path));
    f.remove();
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  {  // --resume without a checkpoint is a fresh start; failing before any task leaves nothing
    CheckpointFile f(path, identity(), three_tasks(), true);
    EXPECT_TRUE(f.done().empty());
    EXPECT_TRUE(std::filesystem::exists(path));
    f.remove_if_empty();
    EXPECT_FALSE(std::filesystem::exists(path));
  }
}

}  // namespace
}  // namespace fasa
