// Sharded sweeps: --shard I/N is parsed strictly, every task lands in exactly one shard, a shard
// record round-trips, the merge of N shards gives the whole sweep's reports, and every way the
// shards can fail to be one finished sweep is refused with the directory named.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fasa/eval/sweep.h"
#include "fasa/eval/sweep_checkpoint.h"
#include "fasa/eval/sweep_shard.h"
#include "support/expect_error.h"

namespace fasa {
namespace {

using test::expect_error;

TEST(SweepShard, ParsesIOverN) {
  EXPECT_EQ(parse_shard("0/1").index, 0);
  EXPECT_EQ(parse_shard("0/1").count, 1);
  EXPECT_EQ(parse_shard("3/4").index, 3);
  EXPECT_EQ(parse_shard("3/4").count, 4);
  for (const char* bad : {"", "1", "4/4", "5/4", "-1/2", "1/0", "0/-2", "a/b", "1/2/3", " 1/2",
                          "1/2 ", "0x1/2", "0/65537", "/2", "1/"}) {
    expect_error([&] { parse_shard(bad); }, "expected I/N with 0 <= I < N");
  }
}

TEST(SweepShard, EveryTaskInExactlyOneShard) {
  for (int n_shards : {1, 2, 3, 7}) {
    for (size_t n_tasks : {size_t{1}, size_t{5}, size_t{6}, size_t{20}}) {
      std::vector<int> owners(n_tasks, 0);
      size_t total = 0;
      for (int i = 0; i < n_shards; ++i) {
        const ShardSpec s{i, n_shards};
        const std::vector<char> elsewhere = tasks_elsewhere(s, n_tasks);
        ASSERT_EQ(elsewhere.size(), n_tasks);
        size_t mine = 0;
        for (size_t t = 0; t < n_tasks; ++t) {
          if (!elsewhere[t]) {
            owners[t] += 1;
            mine += 1;
          }
        }
        EXPECT_EQ(mine, shard_task_count(s, n_tasks)) << i << "/" << n_shards;
        total += mine;
      }
      EXPECT_EQ(total, n_tasks);
      for (int o : owners) EXPECT_EQ(o, 1);
    }
  }
  EXPECT_TRUE(tasks_elsewhere(ShardSpec{}, 5).empty());  // not sharded: nothing elsewhere
  EXPECT_EQ(shard_task_count(ShardSpec{}, 5), 5u);
}

// A sweep of 5 tasks × 2 settings, whole, and its records as shards.
struct Fixture {
  std::vector<Task> tasks;
  std::vector<SweepEntry> entries;
  SweepMeta meta;
  TaskRunResult whole;

  Fixture() {
    for (int i = 0; i < 5; ++i) {
      tasks.push_back({"t" + std::to_string(i),
                       i < 3 ? "passkey" : "qa",
                       "prompt",
                       {std::to_string(i)},
                       8,
                       TaskMetric::Contains});
    }
    entries = sweep_entries({"full", "streaming"}, {"16"}, "");
    meta.model = "m.gguf";
    meta.model_sha256 = std::string(64, 'a');
    meta.tasks_file = "t.jsonl";
    meta.tasks_sha256 = std::string(64, 'c');
    meta.version = "0.6.0 (abcdef1)";
    meta.date = "2026-12-03T07:00:00Z";
    meta.kv_type = "f16";
    meta.threads = 2;
    for (const auto& e : entries) whole.policies.push_back(e.spec);
    whole.n_ctx = 300;
    for (size_t i = 0; i < tasks.size(); ++i) {
      whole.n_prompt.push_back(200 + static_cast<int>(i));
      std::vector<TaskOutcome> outs;
      for (size_t p = 0; p < entries.size(); ++p) {
        TaskOutcome o;
        o.output = (i + p) % 2 ? "the answer is " + std::to_string(i) : "no idea";
        o.score = score_output(tasks[i].metric, o.output, tasks[i].answers);
        o.partial = partial_credit(tasks[i].metric, o.output, tasks[i].answers);
        o.n_generated = 3 + static_cast<int>(i);
        o.decode_ms = 10.0 / static_cast<double>(i + 1);
        o.attn.decode_tokens = 3 + i;
        o.attn.decode_steps = 3 + i;
        o.attn.slots_read = 100 * (p + 1) + i;
        o.attn.slots_visible = 600 + i;
        o.attn.attend_bytes = 1000 * (p + 1) + i;
        o.kv_resident_bytes = 4096 * (p + 1) + i;
        outs.push_back(o);
      }
      whole.outcome.push_back(outs);
    }
  }

  // Shard i of n as `eval sweep --shard` leaves it; `prefill_s` per task, `seconds` for the run.
  ShardFiles shard(int i, int n, const std::string& dir) const {
    ShardRecord rec;
    rec.shard = {i, n};
    rec.meta = meta;
    rec.entries = entries;
    rec.n_tasks = static_cast<int>(tasks.size());
    rec.n_ctx = whole.n_ctx;
    rec.seconds = 1.5;
    rec.n_prefills = static_cast<int>(shard_task_count(rec.shard, tasks.size()));
    rec.meta.resumed_tasks = i == 0 ? 1 : 0;
    ShardFiles f;
    f.dir = dir;
    f.shard_json = shard_json(rec);
    f.checkpoint = checkpoint_header_line(shard_identity(rec)) + "\n";
    for (size_t t = tasks.size(); t-- > 0;) {  // lines in the order tasks finished: any
      if (t % static_cast<size_t>(n) != static_cast<size_t>(i)) continue;
      f.checkpoint += checkpoint_task_line({t, tasks[t].id, whole.n_prompt[t], 0.25,
                                            whole.outcome[t], meta.version}) +
                      "\n";
    }
    return f;
  }
};

TEST(SweepShard, RecordRoundTrips) {
  const Fixture fx;
  const ShardFiles f = fx.shard(1, 3, "s1");
  const ShardRecord rec = parse_shard_json(f.shard_json, "s1/shard.json");
  EXPECT_EQ(rec.shard.index, 1);
  EXPECT_EQ(rec.shard.count, 3);
  EXPECT_EQ(shard_json(rec), f.shard_json);
  EXPECT_EQ(rec.meta.model_sha256, fx.meta.model_sha256);
  EXPECT_EQ(rec.n_ctx, 300);
  ASSERT_EQ(rec.entries.size(), fx.entries.size());
  EXPECT_EQ(rec.entries[1].spec, "streaming:budget=16");
  EXPECT_EQ(rec.entries[1].budget, 16.0);
  expect_error([] { parse_shard_json("{}", "x/shard.json"); }, "x/shard.json: not a shard record");
  expect_error([] { parse_shard_json("{\"format\": \"fasa-sweep-shard\"", "x/shard.json"); },
               "x/shard.json: not valid JSON");
  std::string bad = f.shard_json;
  bad.replace(bad.find("\"n_ctx\": 300"), 12, "\"n_ctx\": -3");
  expect_error([&] { parse_shard_json(bad, "x/shard.json"); }, "\"n_ctx\"");
  // The protocol round-trips; a record without it (written before it was recorded) is dense
  // prefill; an unknown one is refused.
  EXPECT_FALSE(rec.meta.question_under_policy);
  Fixture q = fx;
  q.meta.question_under_policy = true;
  const ShardFiles qf = q.shard(1, 3, "q1");
  const ShardRecord qrec = parse_shard_json(qf.shard_json, "q1/shard.json");
  EXPECT_TRUE(qrec.meta.question_under_policy);
  EXPECT_TRUE(shard_identity(qrec).question_under_policy);
  EXPECT_EQ(shard_json(qrec), qf.shard_json);
  std::string old = f.shard_json;
  const std::string line = " \"protocol\": \"dense-prefill\",\n";
  old.erase(old.find(line), line.size());
  EXPECT_FALSE(parse_shard_json(old, "x/shard.json").meta.question_under_policy);
  // The kernels round-trip; older records have none.
  Fixture kx = fx;
  kx.meta.kernels = "avx512, AMX on";
  EXPECT_EQ(parse_shard_json(kx.shard(1, 3, "k").shard_json, "k").meta.kernels, "avx512, AMX on");
  std::string unknown = f.shard_json;
  unknown.replace(unknown.find("dense-prefill"), 13, "sparse-prefill");
  expect_error([&] { parse_shard_json(unknown, "x/shard.json"); },
               "x/shard.json: field \"protocol\" must be \"dense-prefill\" or "
               "\"question-under-policy\" (got \"sparse-prefill\")");
}

// Merging the shards in any order gives the whole sweep's results.json byte for byte, once the
// fields that describe the run are the sums the merge records.
TEST(SweepShard, MergeEqualsTheWholeSweep) {
  Fixture fx;
  for (int n : {1, 2, 3, 5}) {
    std::vector<ShardFiles> shards;
    for (int i = n - 1; i >= 0; --i) shards.push_back(fx.shard(i, n, "s" + std::to_string(i)));
    const MergedSweep m = merge_shards(shards, fx.tasks, fx.meta.tasks_sha256);
    EXPECT_EQ(m.meta.shards, n);
    EXPECT_EQ(m.meta.resumed_tasks, 1);  // shard 0's
    ASSERT_EQ(m.meta.task_builds.size(), 1u);
    EXPECT_EQ(m.meta.task_builds[0].first, fx.meta.version);
    EXPECT_EQ(m.meta.task_builds[0].second, 5);
    EXPECT_EQ(m.r.n_known, 0);
    EXPECT_DOUBLE_EQ(m.r.seconds, 1.5 * n);
    EXPECT_DOUBLE_EQ(m.r.prefill_seconds, 0.25 * 5);
    EXPECT_EQ(m.r.n_prefills, 5);
    TaskRunResult whole = fx.whole;
    whole.seconds = m.r.seconds;
    whole.prefill_seconds = m.r.prefill_seconds;
    whole.n_prefills = m.r.n_prefills;
    SweepMeta meta = fx.meta;
    meta.resumed_tasks = 1;
    meta.shards = n;
    meta.task_builds = m.meta.task_builds;
    EXPECT_EQ(sweep_json(m.meta, fx.tasks, m.entries, m.r),
              sweep_json(meta, fx.tasks, fx.entries, whole))
        << n << " shards";
    EXPECT_EQ(sweep_markdown(m.meta, fx.tasks, m.entries, m.r),
              sweep_markdown(meta, fx.tasks, fx.entries, whole));
    EXPECT_EQ(sweep_plots(fx.tasks, m.entries, m.r), sweep_plots(fx.tasks, fx.entries, whole));
  }
}

TEST(SweepShard, MergeRefusesWhatIsNotOneFinishedSweep) {
  Fixture fx;
  const std::vector<ShardFiles> ok = {fx.shard(0, 3, "a"), fx.shard(1, 3, "b"),
                                      fx.shard(2, 3, "c")};
  const std::string sha = fx.meta.tasks_sha256;
  merge_shards(ok, fx.tasks, sha);  // fine
  expect_error([&] { merge_shards({}, fx.tasks, sha); }, "no shards to merge");
  expect_error(
      [&] {
        merge_shards({ok[0], ok[2]}, fx.tasks, sha);
      },
      "shard 1/3 is missing: merge needs all 3 shards' directories");
  expect_error(
      [&] {
        merge_shards({ok[0], ok[1], ok[2], fx.shard(1, 3, "d")}, fx.tasks, sha);
      },
      "shard 1/3 is given twice: b and d");
  expect_error(
      [&] {
        merge_shards({ok[0], ok[1], fx.shard(1, 2, "e")}, fx.tasks, sha);
      },
      "e: shard 1/2 has shard count = 2, but shard 0/3 (a) has 3");
  // Another sweep's shard: another model, build, calibration, settings.
  auto other = [&](const std::function<void(Fixture&)>& change) {
    Fixture f2 = fx;
    change(f2);
    return std::vector<ShardFiles>{ok[0], ok[1], f2.shard(2, 3, "x")};
  };
  expect_error(
      [&] {
        merge_shards(other([](Fixture& f) { f.meta.model_sha256 = std::string(64, 'b'); }),
                     fx.tasks, sha);
      },
      "x: shard 2/3 has model_sha256 = bbbb");
  expect_error(
      [&] {
        merge_shards(other([](Fixture& f) { f.meta.version = "0.6.0 (1234567)"; }), fx.tasks, sha);
      },
      "has fasa_version = 0.6.0 (1234567), but shard 0/3 (a) has 0.6.0 (abcdef1)");
  expect_error(
      [&] { merge_shards(other([](Fixture& f) { f.meta.calib_sha256 = "dd"; }), fx.tasks, sha); },
      "has calib_sha256 = dd");
  expect_error(
      [&] {
        merge_shards(other([](Fixture& f) { f.meta.question_under_policy = true; }), fx.tasks, sha);
      },
      "has protocol = question-under-policy, but shard 0/3 (a) has dense-prefill");
  expect_error(
      [&] {
        merge_shards(other([](Fixture& f) { f.entries = sweep_entries({"full"}, {}, ""); }),
                     fx.tasks, sha);
      },
      "has settings = full,");
  expect_error(
      [&] { merge_shards(other([](Fixture& f) { f.meta.kv_type = "q8_0"; }), fx.tasks, sha); },
      "has kv_type = q8_0");
  // Another task file.
  expect_error([&] { merge_shards(ok, fx.tasks, std::string(64, 'e')); },
               "the task file is not the shards'");
  std::vector<Task> fewer = fx.tasks;
  fewer.pop_back();
  expect_error([&] { merge_shards(ok, fewer, sha); }, "the task file is not the shards'");
  // A shard that did not finish: a task line missing, or its last line cut short.
  std::vector<ShardFiles> unfinished = ok;
  std::string& ck = unfinished[1].checkpoint;  // shard 1/3: tasks 4 then 1
  ck.erase(ck.rfind('\n', ck.size() - 2) + 1);
  expect_error([&] { merge_shards(unfinished, fx.tasks, sha); },
               "b/checkpoint.jsonl: shard 1/3 has 1 of its 2 tasks (task 1, 't1', is missing)");
  unfinished = ok;
  unfinished[1].checkpoint.pop_back();
  expect_error([&] { merge_shards(unfinished, fx.tasks, sha); },
               "b/checkpoint.jsonl: its last line is cut short");
  // A checkpoint holding another shard's task, or written for another shard.
  unfinished = ok;
  unfinished[1].checkpoint +=
      checkpoint_task_line({0, "t0", 200, 0.25, fx.whole.outcome[0], fx.meta.version}) + "\n";
  expect_error([&] { merge_shards(unfinished, fx.tasks, sha); }, "task 0 is not in shard 1/3");
  unfinished = ok;
  unfinished[1].checkpoint = ok[2].checkpoint;
  expect_error([&] { merge_shards(unfinished, fx.tasks, sha); },
               "b/checkpoint.jsonl: it was written for shard = [2,3], this sweep has shard = "
               "[1,3]");
}

// A shard's checkpoint is resumed only as that shard; a whole sweep's only as a whole sweep.
TEST(SweepShard, CheckpointsKnowTheirShard) {
  const Fixture fx;
  const ShardFiles f = fx.shard(1, 2, "s1");
  SweepIdentity id = shard_identity(parse_shard_json(f.shard_json, "s1/shard.json"));
  EXPECT_EQ(parse_checkpoint(f.checkpoint, "ck", id, fx.tasks).size(), 2u);
  SweepIdentity whole = id;
  whole.shard_count = 0;
  whole.shard_index = 0;
  expect_error([&] { parse_checkpoint(f.checkpoint, "ck", whole, fx.tasks); },
               "ck: it was written for a shard (--shard, \"shard\": [1,2])");
  const std::string whole_ck = checkpoint_header_line(whole) + "\n";
  expect_error([&] { parse_checkpoint(whole_ck, "ck", id, fx.tasks); },
               "ck: it was written for a whole sweep (no --shard)");
}

}  // namespace
}  // namespace fasa
