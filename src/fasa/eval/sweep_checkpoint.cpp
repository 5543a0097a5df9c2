#include "fasa/eval/sweep_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/io/atomic_file.h"
#include "fasa/io/json_read.h"

namespace fasa {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFormat = "fasa-sweep-checkpoint";
constexpr int kVersion = 1;

std::string dump_line(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Json attn_json(const AttnStats& a) {
  Json j;
  j["decode_tokens"] = a.decode_tokens;
  j["decode_steps"] = a.decode_steps;
  j["slots_read"] = a.slots_read;
  j["slots_visible"] = a.slots_visible;
  j["window_slots"] = a.window_slots;
  j["select_bytes"] = a.select_bytes;
  j["attend_bytes"] = a.attend_bytes;
  j["dense_bytes"] = a.dense_bytes;
  j["window_bytes"] = a.window_bytes;
  j["tier_reads"] = a.tier_reads;
  j["tier_read_bytes"] = a.tier_read_bytes;
  j["tier_read_ns"] = a.tier_read_ns;
  return j;
}

AttnStats attn_from(const JsonObject<Json>& j) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  AttnStats a;
  a.decode_tokens = j.number<uint64_t>("decode_tokens", 0, kMax);
  a.decode_steps = j.number<uint64_t>("decode_steps", 0, kMax);
  a.slots_read = j.number<uint64_t>("slots_read", 0, kMax);
  a.slots_visible = j.number<uint64_t>("slots_visible", 0, kMax);
  a.window_slots = j.number<uint64_t>("window_slots", 0, kMax);
  a.select_bytes = j.number<uint64_t>("select_bytes", 0, kMax);
  a.attend_bytes = j.number<uint64_t>("attend_bytes", 0, kMax);
  a.dense_bytes = j.number<uint64_t>("dense_bytes", 0, kMax);
  a.window_bytes = j.number<uint64_t>("window_bytes", 0, kMax);
  a.tier_reads = j.number<uint64_t>("tier_reads", 0, kMax);
  a.tier_read_bytes = j.number<uint64_t>("tier_read_bytes", 0, kMax);
  a.tier_read_ns = j.number<uint64_t>("tier_read_ns", 0, kMax);
  return a;
}

Json identity_json(const SweepIdentity& id) {
  Json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["model_sha256"] = id.model_sha256;
  j["calib_sha256"] = id.calib_sha256;
  j["tasks_sha256"] = id.tasks_sha256;
  j["n_tasks"] = id.n_tasks;
  j["n_ctx"] = id.n_ctx;
  j["chat"] = id.chat;
  j["kv_type"] = id.kv_type;
  j["policies"] = id.policies;
  if (id.shard_count > 0) j["shard"] = {id.shard_index, id.shard_count};
  if (id.question_under_policy) j["protocol"] = protocol_name(true);
  return j;
}

// Value text for an error message: strings unquoted, long lists shortened.
std::string shown(const Json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

void check_header(const Json& got, const SweepIdentity& want, const std::string& source) {
  if (!got.is_object() || !got.contains("format") || got.at("format") != kFormat) {
    fail("{}: line 1 is not a fasa sweep checkpoint header", source);
  }
  const JsonObject<Json> h(got, source + ": line 1");
  const int64_t version = h.number<int64_t>("version", INT64_MIN, INT64_MAX);
  if (version != kVersion) {
    fail("{}: checkpoint version {} (this fasa reads version {})", source, version, kVersion);
  }
  const Json w = identity_json(want);
  if (h.has("shard") && !w.contains("shard")) {
    fail(
        "{}: it was written for a shard (--shard, \"shard\": {}); resume it with the same "
        "--shard, or write to another directory",
        source, shown(h.at("shard")));
  }
  if (!h.has("shard") && w.contains("shard")) {
    fail(
        "{}: it was written for a whole sweep (no --shard); resume it without --shard, or write "
        "to another directory",
        source);
  }
  if (h.has("protocol") && !w.contains("protocol")) {
    fail(
        "{}: it was written for the protocol {} (--question-under-policy); resume it with the "
        "same flag, or write to another directory",
        source, shown(h.at("protocol")));
  }
  for (const auto& [key, value] : w.items()) {
    if (key == "protocol" && !h.has(key)) {
      fail(
          "{}: it was written for the dense-prefill protocol (no --question-under-policy); "
          "resume it without the flag, or write to another directory",
          source);
    }
    if (!h.has(key)) fail("{}: the header has no '{}'", source, key);
    if (h.at(key) != value) {
      fail(
          "{}: it was written for {} = {}, this sweep has {} = {}; resume it with the same "
          "settings, or write to another directory",
          source, key, shown(h.at(key)), key, shown(value));
    }
  }
}

constexpr int kMaxCount = 1 << 30;  // tokens of a prompt or a generation

// One task line; `where` is "FILE:LINE".
TaskDone task_from(const Json& json, const SweepIdentity& want, const std::vector<Task>& tasks,
                   const std::string& where) {
  const JsonObject<Json> j(json, where);
  constexpr double kMaxDouble = std::numeric_limits<double>::max();
  TaskDone d;
  if (tasks.empty()) fail("{}: a task line, but the task file has no tasks", where);
  d.task = j.number<size_t>("task", 0, tasks.size() - 1);
  d.id = j.string("id");
  if (want.shard_count > 0 &&
      d.task % static_cast<size_t>(want.shard_count) != static_cast<size_t>(want.shard_index)) {
    fail("{}: task {} is not in shard {}/{}", where, d.task, want.shard_index, want.shard_count);
  }
  if (d.id != tasks[d.task].id) {
    fail("{}: task {} has id '{}', the task file's is '{}'", where, d.task, d.id, tasks[d.task].id);
  }
  d.n_prompt = j.number<int>("n_prompt", 0, kMaxCount);
  d.prefill_seconds = j.number<double>("prefill_seconds", 0.0, kMaxDouble);
  if (j.has("fasa_version")) d.fasa_version = j.string("fasa_version");
  const Json& outs = j.array("outcomes");
  if (outs.size() != want.policies.size()) {
    fail("{}: task {} has {} outcomes for {} policies", where, d.task, outs.size(),
         want.policies.size());
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const JsonObject<Json> o = j.element("outcomes", i);
    TaskOutcome t;
    t.output = o.string("output");
    t.score = o.number<double>("score", 0.0, 1.0);
    const Task& task = tasks[d.task];
    // A function of the output (a choice task's: its score).
    t.partial = task.metric == TaskMetric::Choice
                    ? t.score
                    : partial_credit(task.metric, t.output, task.answers);
    t.n_generated = o.number<int>("n_generated", 0, kMaxCount);
    t.decode_ms = o.number<double>("decode_ms", 0.0, kMaxDouble);
    t.attn = attn_from(o.object("attn"));
    if (o.has("kv_resident_bytes")) {  // absent in lines written before it was recorded: 0
      t.kv_resident_bytes =
          o.number<uint64_t>("kv_resident_bytes", 0, std::numeric_limits<uint64_t>::max());
    }
    d.outcomes.push_back(std::move(t));
  }
  return d;
}

}  // namespace

std::string checkpoint_header_line(const SweepIdentity& id) { return dump_line(identity_json(id)); }

std::string checkpoint_task_line(const TaskDone& done) {
  Json j;
  j["task"] = done.task;
  j["id"] = done.id;
  j["n_prompt"] = done.n_prompt;
  j["prefill_seconds"] = done.prefill_seconds;
  if (!done.fasa_version.empty()) j["fasa_version"] = done.fasa_version;
  j["outcomes"] = Json::array();
  for (const TaskOutcome& o : done.outcomes) {
    Json e;
    e["output"] = o.output;
    e["score"] = o.score;
    e["n_generated"] = o.n_generated;
    e["decode_ms"] = o.decode_ms;
    e["attn"] = attn_json(o.attn);
    e["kv_resident_bytes"] = o.kv_resident_bytes;
    j["outcomes"].push_back(std::move(e));
  }
  return dump_line(j);
}

std::vector<TaskDone> parse_checkpoint(const std::string& text, const std::string& source,
                                       const SweepIdentity& want, const std::vector<Task>& tasks,
                                       size_t* dropped_bytes) {
  if (dropped_bytes) *dropped_bytes = 0;
  if (text.empty()) fail("{}: empty (no header line)", source);
  std::vector<TaskDone> out;
  std::vector<char> seen(tasks.size(), 0);
  size_t at = 0;
  for (int line_no = 1; at < text.size(); ++line_no) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos && line_no > 1) {  // cut short while being written
      if (dropped_bytes) *dropped_bytes = text.size() - at;
      break;
    }
    const std::string line = text.substr(at, nl == std::string::npos ? nl : nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    const std::string where = source + ": line " + std::to_string(line_no);
    const Json j = json_parse<Json>(line, where);
    if (line_no == 1) {
      check_header(j, want, source);
      continue;
    }
    TaskDone d = task_from(j, want, tasks, where);
    if (seen[d.task]) fail("{}: task {} is there twice", where, d.task);
    seen[d.task] = 1;
    out.push_back(std::move(d));
  }
  return out;
}

void check_same_build(const std::vector<TaskDone>& done, const std::string& current,
                      const std::string& source) {
  for (const TaskDone& d : done) {
    if (d.fasa_version == current) continue;
    fail(
        "{}: task '{}' was run by {}, this is fasa {}; resume with that build, or add "
        "--resume-other-build to mix the two (results.json then counts the tasks of each)",
        source, d.id,
        d.fasa_version.empty() ? std::string("a build that did not record itself")
                               : "fasa " + d.fasa_version,
        current);
  }
}

CheckpointFile::CheckpointFile(std::string path, const SweepIdentity& id,
                               const std::vector<Task>& tasks, bool resume)
    : path_(std::move(path)) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path_, ec);
  if (exists && !resume) {
    fail(
        "'{}' holds the checkpoint of an unfinished sweep: add --resume to finish it, or remove "
        "the file to start again",
        path_);
  }
  std::string text = checkpoint_header_line(id) + "\n";
  if (exists) {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream ss;
    if (!in || !(ss << in.rdbuf())) fail("cannot read '{}'", path_);
    size_t dropped = 0;
    done_ = parse_checkpoint(ss.str(), path_, id, tasks, &dropped);
    if (dropped > 0) {
      std::fprintf(stderr,
                   "fasa: warning: %s: dropped its last line, cut short (%zu bytes) when the "
                   "sweep stopped while writing it; that task runs again\n",
                   path_.c_str(), dropped);
    }
    for (const TaskDone& d : done_) text += checkpoint_task_line(d) + "\n";
  }
  // Written whole (io/atomic_file.h): a crash here leaves the old file intact.
  write_file_atomic(path_, text);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) fail("cannot write '{}': {}", path_, std::strerror(errno));
}

CheckpointFile::~CheckpointFile() { close(); }

void CheckpointFile::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void CheckpointFile::append(const TaskDone& d) {
  if (fd_ < 0) fail("cannot write '{}': closed", path_);
  // One write() and an fsync per line: a kill leaves at most a cut-short last line, which
  // parse_checkpoint drops.
  append_durable(fd_, checkpoint_task_line(d) + "\n", path_);
  ++n_appended_;
}

void CheckpointFile::remove_if_empty() {
  if (done_.empty() && n_appended_ == 0) remove();
}

void CheckpointFile::remove() {
  close();
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

}  // namespace fasa
