#include "fasa/eval/sweep_shard.h"

#include <limits>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/io/json_read.h"

namespace fasa {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFormat = "fasa-sweep-shard";
constexpr int kVersion = 1;
constexpr int kMaxCount = 1 << 30;

// A non-negative decimal integer, the whole of `s`; -1 otherwise.
long long whole_number(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
  }
  return std::stoll(s);
}

std::string shard_name(const ShardSpec& s) { return fmt::format("{}/{}", s.index, s.count); }

}  // namespace

ShardSpec parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  const long long i = slash == std::string::npos ? -1 : whole_number(text.substr(0, slash));
  const long long n = slash == std::string::npos ? -1 : whole_number(text.substr(slash + 1));
  if (i < 0 || n < 1 || n > kMaxShards || i >= n) {
    fail("--shard '{}': expected I/N with 0 <= I < N <= {} (e.g. 0/4 ... 3/4)", text, kMaxShards);
  }
  return {static_cast<int>(i), static_cast<int>(n)};
}

std::vector<char> tasks_elsewhere(ShardSpec shard, size_t n_tasks) {
  if (shard.count == 0) return {};
  std::vector<char> out(n_tasks);
  for (size_t i = 0; i < n_tasks; ++i) {
    out[i] = i % static_cast<size_t>(shard.count) != static_cast<size_t>(shard.index);
  }
  return out;
}

size_t shard_task_count(ShardSpec shard, size_t n_tasks) {
  if (shard.count == 0) return n_tasks;
  const auto n = static_cast<size_t>(shard.count), i = static_cast<size_t>(shard.index);
  return n_tasks / n + (i < n_tasks % n ? 1 : 0);
}

std::string shard_json(const ShardRecord& rec) {
  const SweepMeta& m = rec.meta;
  Json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["shard"] = {rec.shard.index, rec.shard.count};
  j["fasa_version"] = m.version;
  j["kernels"] = m.kernels;
  j["date"] = m.date;
  j["model"] = m.model;
  j["model_sha256"] = m.model_sha256;
  j["calib"] = m.calib;
  j["calib_sha256"] = m.calib_sha256;
  j["tasks_file"] = m.tasks_file;
  j["tasks_sha256"] = m.tasks_sha256;
  j["n_tasks"] = rec.n_tasks;
  j["n_ctx_requested"] = rec.n_ctx_requested;
  j["n_ctx"] = rec.n_ctx;
  j["chat"] = m.chat;
  j["protocol"] = protocol_name(m.question_under_policy);
  j["kv_type"] = m.kv_type;
  j["threads"] = m.threads;
  j["seconds"] = rec.seconds;
  j["prefills"] = rec.n_prefills;
  j["resumed_tasks"] = m.resumed_tasks;
  j["entries"] = Json::array();
  for (const SweepEntry& e : rec.entries) {
    j["entries"].push_back(
        {{"name", e.name}, {"budget", e.budget}, {"spec", e.spec}, {"label", e.label}});
  }
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

ShardRecord parse_shard_json(const std::string& text, const std::string& source) {
  const Json doc = json_parse<Json>(text, source);
  const JsonObject<Json> j(doc, source);
  if (!j.has("format") || j.at("format") != kFormat) {
    fail("{}: not a shard record of `fasa eval sweep --shard` (no \"format\": \"{}\")", source,
         kFormat);
  }
  const int version = j.number<int>("version", 0, kMaxCount);
  if (version != kVersion) {
    fail("{}: shard record version {} (this fasa reads version {})", source, version, kVersion);
  }
  ShardRecord rec;
  const std::vector<int> shard = j.numbers<int>("shard", 0, kMaxShards, 2);
  rec.shard = {shard[0], shard[1]};
  if (rec.shard.count < 1 || rec.shard.index >= rec.shard.count) {
    fail("{}: field \"shard\" must be [I, N] with 0 <= I < N (got [{}, {}])", source, shard[0],
         shard[1]);
  }
  SweepMeta& m = rec.meta;
  m.version = j.string("fasa_version");
  if (j.has("kernels")) m.kernels = j.string("kernels");  // absent in older records
  m.date = j.string("date");
  m.model = j.string("model");
  m.model_sha256 = j.string("model_sha256");
  m.calib = j.string("calib");
  m.calib_sha256 = j.string("calib_sha256");
  m.tasks_file = j.string("tasks_file");
  m.tasks_sha256 = j.string("tasks_sha256");
  rec.n_tasks = j.number<int>("n_tasks", 1, kMaxCount);
  rec.n_ctx_requested = j.number<int>("n_ctx_requested", 0, kMaxCount);
  rec.n_ctx = j.number<int>("n_ctx", 1, kMaxCount);
  m.chat = j.boolean("chat");
  if (j.has("protocol")) {  // absent in records written before it was recorded: dense prefill
    const std::string protocol = j.string("protocol");
    if (protocol != protocol_name(false) && protocol != protocol_name(true)) {
      fail("{}: field \"protocol\" must be \"{}\" or \"{}\" (got \"{}\")", source,
           protocol_name(false), protocol_name(true), protocol);
    }
    m.question_under_policy = protocol == protocol_name(true);
  }
  m.kv_type = j.string("kv_type");
  m.threads = j.number<int>("threads", 0, kMaxCount);
  rec.seconds = j.number<double>("seconds", 0.0, std::numeric_limits<double>::max());
  rec.n_prefills = j.number<int>("prefills", 0, kMaxCount);
  m.resumed_tasks = j.number<int>("resumed_tasks", 0, rec.n_tasks);
  const Json& entries = j.array("entries");
  if (entries.empty()) fail("{}: field \"entries\" is empty", source);
  for (size_t i = 0; i < entries.size(); ++i) {
    const JsonObject<Json> e = j.element("entries", i);
    rec.entries.push_back({e.string("name"),
                           e.number<double>("budget", 0.0, std::numeric_limits<double>::max()),
                           e.string("spec"), e.string("label")});
  }
  return rec;
}

SweepIdentity shard_identity(const ShardRecord& rec) {
  SweepIdentity id;
  id.model_sha256 = rec.meta.model_sha256;
  id.calib_sha256 = rec.meta.calib_sha256;
  id.tasks_sha256 = rec.meta.tasks_sha256;
  id.kv_type = rec.meta.kv_type;
  id.n_tasks = rec.n_tasks;
  id.n_ctx = rec.n_ctx_requested;
  id.chat = rec.meta.chat;
  id.question_under_policy = rec.meta.question_under_policy;
  for (const SweepEntry& e : rec.entries) id.policies.push_back(e.spec);
  id.shard_index = rec.shard.index;
  id.shard_count = rec.shard.count;
  return id;
}

namespace {

// What every shard of one sweep must agree on, by name, as text (for the error message).
std::vector<std::pair<std::string, std::string>> sweep_settings(const ShardRecord& r) {
  std::string entries;
  for (const SweepEntry& e : r.entries) entries += (entries.empty() ? "" : ",") + e.spec;
  return {{"shard count", std::to_string(r.shard.count)},
          {"model_sha256", r.meta.model_sha256},
          {"calib_sha256", r.meta.calib_sha256},
          {"tasks_sha256", r.meta.tasks_sha256},
          {"n_tasks", std::to_string(r.n_tasks)},
          {"fasa_version", r.meta.version},
          {"kernels", r.meta.kernels},
          {"n_ctx_requested", std::to_string(r.n_ctx_requested)},
          {"n_ctx", std::to_string(r.n_ctx)},
          {"chat", r.meta.chat ? "true" : "false"},
          {"protocol", protocol_name(r.meta.question_under_policy)},
          {"kv_type", r.meta.kv_type},
          {"settings", entries}};
}

bool same_entries(const std::vector<SweepEntry>& a, const std::vector<SweepEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].budget != b[i].budget || a[i].spec != b[i].spec ||
        a[i].label != b[i].label) {
      return false;
    }
  }
  return true;
}

std::string shortened(const std::string& s) { return s.size() > 100 ? s.substr(0, 97) + "..." : s; }

}  // namespace

MergedSweep merge_shards(const std::vector<ShardFiles>& shards, const std::vector<Task>& tasks,
                         const std::string& tasks_sha256) {
  if (shards.empty()) fail("no shards to merge");
  std::vector<ShardRecord> recs;
  for (const ShardFiles& s : shards) {
    recs.push_back(parse_shard_json(s.shard_json, s.dir + "/shard.json"));
  }
  // One sweep: every setting shard 0's (in the order given), then each shard once.
  const auto want = sweep_settings(recs[0]);
  for (size_t k = 1; k < recs.size(); ++k) {
    const auto got = sweep_settings(recs[k]);
    for (size_t f = 0; f < want.size(); ++f) {
      if (got[f].second == want[f].second) continue;
      fail("{}: shard {} has {} = {}, but shard {} ({}) has {}; merge the shards of one sweep",
           shards[k].dir, shard_name(recs[k].shard), got[f].first, shortened(got[f].second),
           shard_name(recs[0].shard), shards[0].dir, shortened(want[f].second));
    }
    if (!same_entries(recs[k].entries, recs[0].entries)) {
      fail("{}: shard {} has other settings (labels or budgets) than shard {} ({})", shards[k].dir,
           shard_name(recs[k].shard), shard_name(recs[0].shard), shards[0].dir);
    }
  }
  const int n_shards = recs[0].shard.count;
  std::vector<int> given(static_cast<size_t>(n_shards), -1);  // [n_shards] index into shards
  for (size_t k = 0; k < recs.size(); ++k) {
    int& g = given[static_cast<size_t>(recs[k].shard.index)];
    if (g >= 0) {
      fail("shard {} is given twice: {} and {}", shard_name(recs[k].shard), shards[g].dir,
           shards[k].dir);
    }
    g = static_cast<int>(k);
  }
  for (int i = 0; i < n_shards; ++i) {
    if (given[static_cast<size_t>(i)] < 0) {
      fail("shard {}/{} is missing: merge needs all {} shards' directories", i, n_shards, n_shards);
    }
  }
  if (tasks_sha256 != recs[0].meta.tasks_sha256 ||
      tasks.size() != static_cast<size_t>(recs[0].n_tasks)) {
    fail(
        "the task file is not the shards' (sha256 {}, {} tasks; the shards ran {}, sha256 {}, "
        "{} tasks): give --tasks with that file",
        tasks_sha256.substr(0, 16), tasks.size(), recs[0].meta.tasks_file,
        recs[0].meta.tasks_sha256.substr(0, 16), recs[0].n_tasks);
  }

  MergedSweep out;
  out.meta = recs[0].meta;
  out.entries = recs[0].entries;
  TaskRunResult& r = out.r;
  for (const SweepEntry& e : out.entries) r.policies.push_back(e.spec);
  r.n_prompt.assign(tasks.size(), 0);
  r.outcome.resize(tasks.size());
  r.n_ctx = recs[0].n_ctx;
  out.meta.resumed_tasks = 0;
  std::map<std::string, int> builds;
  for (size_t k = 0; k < recs.size(); ++k) {
    const std::string source = shards[k].dir + "/checkpoint.jsonl";
    size_t dropped = 0;
    const std::vector<TaskDone> done =
        parse_checkpoint(shards[k].checkpoint, source, shard_identity(recs[k]), tasks, &dropped);
    if (dropped > 0) fail("{}: its last line is cut short: the shard did not finish", source);
    for (const TaskDone& d : done) {
      r.outcome[d.task] = d.outcomes;
      r.n_prompt[d.task] = d.n_prompt;
      r.prefill_seconds += d.prefill_seconds;
      builds[d.fasa_version.empty() ? "unrecorded" : d.fasa_version] += 1;
    }
    const size_t n_want = shard_task_count(recs[k].shard, tasks.size());
    if (done.size() != n_want) {
      // parse_checkpoint refuses another shard's tasks and duplicates: one of its own is missing.
      size_t missing = static_cast<size_t>(recs[k].shard.index);
      while (!r.outcome[missing].empty()) missing += static_cast<size_t>(recs[k].shard.count);
      fail(
          "{}: shard {} has {} of its {} tasks (task {}, '{}', is missing): it did not finish; "
          "run it again with --resume",
          source, shard_name(recs[k].shard), done.size(), n_want, missing, tasks[missing].id);
    }
    r.seconds += recs[k].seconds;
    r.n_prefills += recs[k].n_prefills;
    out.meta.resumed_tasks += recs[k].meta.resumed_tasks;
  }
  out.meta.task_builds.assign(builds.begin(), builds.end());
  out.meta.shards = n_shards;
  return out;
}

}  // namespace fasa
