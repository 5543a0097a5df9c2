#include "fasa/eval/sweep_checkpoint.h"

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fasa/core/error.h"

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

AttnStats attn_from(const Json& j) {
  AttnStats a;
  a.decode_tokens = j.at("decode_tokens").get<uint64_t>();
  a.decode_steps = j.at("decode_steps").get<uint64_t>();
  a.slots_read = j.at("slots_read").get<uint64_t>();
  a.slots_visible = j.at("slots_visible").get<uint64_t>();
  a.window_slots = j.at("window_slots").get<uint64_t>();
  a.select_bytes = j.at("select_bytes").get<uint64_t>();
  a.attend_bytes = j.at("attend_bytes").get<uint64_t>();
  a.dense_bytes = j.at("dense_bytes").get<uint64_t>();
  a.window_bytes = j.at("window_bytes").get<uint64_t>();
  a.tier_reads = j.at("tier_reads").get<uint64_t>();
  a.tier_read_bytes = j.at("tier_read_bytes").get<uint64_t>();
  a.tier_read_ns = j.at("tier_read_ns").get<uint64_t>();
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
  return j;
}

// Value text for an error message: strings unquoted, long lists shortened.
std::string shown(const Json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

void check_header(const Json& got, const SweepIdentity& want, const std::string& source) {
  if (!got.is_object() || got.value("format", "") != kFormat) {
    fail("{}: line 1 is not a fasa sweep checkpoint header", source);
  }
  if (got.value("version", 0) != kVersion) {
    fail("{}: checkpoint version {} (this fasa reads version {})", source, shown(got["version"]),
         kVersion);
  }
  const Json w = identity_json(want);
  for (const auto& [key, value] : w.items()) {
    if (!got.contains(key)) fail("{}: the header has no '{}'", source, key);
    if (got[key] != value) {
      fail("{}: it was written for {} = {}, this sweep has {} = {}; resume it with the same "
           "settings, or write to another directory",
           source, key, shown(got[key]), key, shown(value));
    }
  }
}

TaskDone task_from(const Json& j, const SweepIdentity& want, const std::vector<Task>& tasks) {
  TaskDone d;
  const int64_t index = j.at("task").get<int64_t>();
  if (index < 0 || index >= static_cast<int64_t>(tasks.size())) {
    fail("task index {} is outside the task file's {} tasks", index, tasks.size());
  }
  d.task = static_cast<size_t>(index);
  d.id = j.at("id").get<std::string>();
  if (d.id != tasks[d.task].id) {
    fail("task {} has id '{}', the task file's is '{}'", index, d.id, tasks[d.task].id);
  }
  d.n_prompt = j.at("n_prompt").get<int>();
  d.prefill_seconds = j.at("prefill_seconds").get<double>();
  if (j.contains("fasa_version")) d.fasa_version = j.at("fasa_version").get<std::string>();
  const Json& outs = j.at("outcomes");
  if (!outs.is_array() || outs.size() != want.policies.size()) {
    fail("task {} has {} outcomes for {} policies", index, outs.is_array() ? outs.size() : 0,
         want.policies.size());
  }
  for (const Json& o : outs) {
    TaskOutcome t;
    t.output = o.at("output").get<std::string>();
    t.score = o.at("score").get<double>();
    t.n_generated = o.at("n_generated").get<int>();
    t.decode_ms = o.at("decode_ms").get<double>();
    t.attn = attn_from(o.at("attn"));
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
    j["outcomes"].push_back(std::move(e));
  }
  return dump_line(j);
}

std::vector<TaskDone> parse_checkpoint(const std::string& text, const std::string& source,
                                       const SweepIdentity& want, const std::vector<Task>& tasks) {
  std::vector<TaskDone> out;
  std::vector<char> seen(tasks.size(), 0);
  size_t at = 0;
  for (int line_no = 1; at < text.size(); ++line_no) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos && line_no > 1) break;  // cut short while being written
    const std::string line = text.substr(at, nl == std::string::npos ? nl : nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    Json j;
    try {
      j = Json::parse(line);
    } catch (const std::exception&) {
      fail("{}: line {} is not valid JSON", source, line_no);
    }
    if (line_no == 1) {
      check_header(j, want, source);
      continue;
    }
    TaskDone d;
    try {
      if (!j.is_object()) fail("not a JSON object");
      d = task_from(j, want, tasks);
    } catch (const nlohmann::json::exception& e) {
      fail("{}: line {}: a field is missing or of the wrong type ({})", source, line_no,
           e.what());
    } catch (const Error& e) {
      fail("{}: line {}: {}", source, line_no, e.what());
    }
    if (seen[d.task]) fail("{}: line {}: task {} is there twice", source, line_no, d.task);
    seen[d.task] = 1;
    out.push_back(std::move(d));
  }
  if (text.empty()) fail("{}: empty (no header line)", source);
  return out;
}

void check_same_build(const std::vector<TaskDone>& done, const std::string& current,
                      const std::string& source) {
  for (const TaskDone& d : done) {
    if (d.fasa_version == current) continue;
    fail("{}: task '{}' was run by {}, this is fasa {}; resume with that build, or add "
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
    fail("'{}' holds the checkpoint of an unfinished sweep: add --resume to finish it, or remove "
         "the file to start again",
         path_);
  }
  std::string text = checkpoint_header_line(id) + "\n";
  if (exists) {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream ss;
    if (!in || !(ss << in.rdbuf())) fail("cannot read '{}'", path_);
    done_ = parse_checkpoint(ss.str(), path_, id, tasks);
    for (const TaskDone& d : done_) text += checkpoint_task_line(d) + "\n";
  }
  // Written whole to a temporary name, then renamed: a crash here leaves the old file intact.
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f || !(f << text) || !f.flush()) fail("cannot write '{}'", tmp);
  }
  std::filesystem::rename(tmp, path_, ec);
  if (ec) fail("cannot write '{}': {}", path_, ec.message());
  out_.open(path_, std::ios::binary | std::ios::app);
  if (!out_) fail("cannot write '{}'", path_);
}

void CheckpointFile::append(const TaskDone& d) {
  if (!(out_ << checkpoint_task_line(d) << '\n') || !out_.flush()) {
    fail("cannot write '{}'", path_);
  }
  ++n_appended_;
}

void CheckpointFile::remove_if_empty() {
  if (done_.empty() && n_appended_ == 0) remove();
}

void CheckpointFile::remove() {
  out_.close();
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

}  // namespace fasa
