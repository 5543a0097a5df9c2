#include "fasa/eval/sweep_run.h"

#include <ctime>
#include <filesystem>
#include <map>
#include <tuple>
#include <utility>

#include "fasa/attention/calibration_store.h"
#include "fasa/attention/policy.h"
#include "fasa/core/error.h"
#include "fasa/core/input_file.h"
#include "fasa/core/parallel.h"
#include "fasa/core/sha256.h"
#include "fasa/eval/sweep_checkpoint.h"
#include "fasa/io/atomic_file.h"
#include "fasa/io/gguf.h"
#include "fasa/io/svg.h"
#include "fasa/kernels/kv_rows.h"

namespace fasa {

namespace {

namespace fs = std::filesystem;

// "2026-12-03T07:00:00Z", now.
std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void write_file(const fs::path& p, const std::string& s) { write_file_atomic(p.string(), s); }

void make_out_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) fail("cannot create output directory '{}'", dir);
}

// What results.json records about the run (the hashes bind a resumed sweep to its inputs).
SweepMeta sweep_meta(const SweepSettings& s, const Model& model) {
  SweepMeta m;
  m.model = model.file().path();
  m.model_sha256 = sha256_file_hex(m.model);
  m.calib = s.calib;
  if (!s.calib.empty() && s.calib != "online") m.calib_sha256 = sha256_file_hex(s.calib);
  m.tasks_file = s.tasks_file;
  m.tasks_sha256 = sha256_file_hex(s.tasks_file);
  m.version = s.version;
  m.kernels = s.kernels;
  m.date = utc_now();
  m.chat = s.chat;
  m.question_under_policy = s.question_under_policy;
  m.kv_type = s.kv_type;
  m.threads = num_threads();
  return m;
}

// What a checkpoint must match to be resumed.
SweepIdentity sweep_identity(const SweepSettings& s, const SweepMeta& m, size_t n_tasks,
                             const std::vector<std::string>& policies) {
  SweepIdentity id;
  id.model_sha256 = m.model_sha256;
  id.calib_sha256 = m.calib_sha256;
  id.tasks_sha256 = m.tasks_sha256;
  id.kv_type = s.kv_type;
  id.n_tasks = static_cast<int>(n_tasks);
  id.n_ctx = s.n_ctx;
  id.chat = s.chat;
  id.question_under_policy = s.question_under_policy;
  id.policies = policies;
  id.shard_index = s.shard.index;
  id.shard_count = s.shard.count;
  return id;
}

// The checkpoint's finished tasks as known outcomes (their prefill time into *resumed_prefill_s),
// and each task finished here appended to it at once.
TaskRunResume resume_from(CheckpointFile& ckpt, const std::vector<Task>& tasks,
                          const std::string& version, double* resumed_prefill_s) {
  TaskRunResume resume;
  if (!ckpt.done().empty()) {
    resume.known.resize(tasks.size());
    for (const TaskDone& d : ckpt.done()) {
      resume.known[d.task] = d.outcomes;
      *resumed_prefill_s += d.prefill_seconds;
    }
  }
  resume.on_task_done = [&ckpt, &tasks, version](size_t i, int n_prompt,
                                                 const std::vector<TaskOutcome>& outcomes,
                                                 double prefill_s) {
    ckpt.append({i, tasks[i].id, n_prompt, prefill_s, outcomes, version});
  };
  return resume;
}

// Tasks per build that ran them: the checkpoint's, and this run's.
std::vector<std::pair<std::string, int>> task_builds(const CheckpointFile& ckpt,
                                                     const std::string& version, size_t n_tasks,
                                                     int n_known) {
  std::map<std::string, int> builds;
  for (const TaskDone& d : ckpt.done()) {
    builds[d.fasa_version.empty() ? "unrecorded" : d.fasa_version] += 1;
  }
  if (n_tasks > static_cast<size_t>(n_known)) {
    builds[version] += static_cast<int>(n_tasks) - n_known;
  }
  return {builds.begin(), builds.end()};
}

// results.json, results.md and the plots into `dir`; returns the markdown and the plots' names.
std::pair<std::string, std::vector<std::string>> write_reports(
    const fs::path& dir, const SweepMeta& m, const std::vector<Task>& tasks,
    const std::vector<SweepEntry>& entries, const TaskRunResult& r) {
  write_file(dir / "results.json", sweep_json(m, tasks, entries, r));
  const std::string md = sweep_markdown(m, tasks, entries, r);
  write_file(dir / "results.md", md);
  std::vector<std::string> plots;
  for (const auto& [name, svg] : sweep_plots(tasks, entries, r)) {
    write_svg_file((dir / name).string(), svg);
    plots.push_back(name);
  }
  return {md, plots};
}

// No calibration given and some policy takes one: the model's stored one, else online.
void resolve_calibration(SweepSettings& s, const Model& model, std::vector<SweepEntry>& entries,
                         const SweepEvents& events) {
  bool calibrated = false;  // some policy takes a calibration
  for (const std::string& spec : s.policies) {
    calibrated |= policy_takes_calibration(spec.substr(0, spec.find(':')));
  }
  if (!s.calib.empty() || !calibrated) return;
  s.calib = find_stored_calibration(model.sha256());
  entries = sweep_entries(s.policies, s.budgets, s.calib.empty() ? "online" : s.calib);
  if (s.calib.empty()) s.calib = "online";
  if (events.calibration) events.calibration(s.calib);
}

// The shard's record, beside its checkpoint (which holds the shard's outcomes `eval merge`
// reads).
void write_shard(const fs::path& dir, const SweepSettings& s, const SweepMeta& m,
                 const std::vector<SweepEntry>& entries, size_t n_tasks, const TaskRunResult& r) {
  ShardRecord rec;
  rec.shard = s.shard;
  rec.meta = m;
  rec.entries = entries;
  rec.n_tasks = static_cast<int>(n_tasks);
  rec.n_ctx_requested = s.n_ctx;
  rec.n_ctx = r.n_ctx;
  rec.seconds = r.seconds;
  rec.n_prefills = r.n_prefills;
  write_file(dir / "shard.json", shard_json(rec));
}

TaskRunOptions task_options(const SweepSettings& s, const std::vector<SweepEntry>& entries) {
  TaskRunOptions o;
  o.policies.clear();  // (the default is {"full"})
  for (const auto& e : entries) o.policies.push_back(e.spec);
  o.chat = s.chat;
  o.question_under_policy = s.question_under_policy;
  o.jobs = s.jobs;
  o.n_ctx = s.n_ctx;
  o.kv_type = parse_kv_type(s.kv_type);
  return o;
}

}  // namespace

SweepReports run_sweep(const SweepSettings& settings,
                       const std::function<std::shared_ptr<const Model>()>& load_model,
                       const SweepEvents& events) {
  SweepSettings s = settings;
  std::vector<SweepEntry> entries = sweep_entries(s.policies, s.budgets, s.calib);
  const std::vector<Task> tasks = load_tasks(s.tasks_file);
  make_out_dir(s.out_dir);
  const fs::path dir(s.out_dir);
  if (s.shard.count > 0 && !s.resume && fs::exists(dir / "shard.json")) {
    fail(
        "'{}' holds a finished shard (shard.json): merge it with `fasa eval merge`, or write to "
        "another directory",
        s.out_dir);
  }
  auto model = load_model();
  resolve_calibration(s, *model, entries, events);
  SweepMeta m = sweep_meta(s, *model);
  const TaskRunOptions o = task_options(s, entries);
  // Every finished task goes to DIR/checkpoint.jsonl at once; resume runs only the others.
  const std::string ckpt_path = (dir / "checkpoint.jsonl").string();
  CheckpointFile ckpt(ckpt_path, sweep_identity(s, m, tasks.size(), o.policies), tasks, s.resume);
  if (!s.resume_other_build) check_same_build(ckpt.done(), m.version, ckpt_path);
  double resumed_prefill_s = 0.0;
  TaskRunResume resume = resume_from(ckpt, tasks, m.version, &resumed_prefill_s);
  resume.elsewhere = tasks_elsewhere(s.shard, tasks.size());
  SweepReports out;
  out.n_mine = shard_task_count(s.shard, tasks.size());
  if (s.shard.count > 0) fs::remove(dir / "shard.json");  // written again when this run finishes
  if (events.started) {
    events.started({entries.size(), tasks.size(), out.n_mine, ckpt.done().size(), ckpt_path});
  }
  TaskRunResult r;
  try {
    r = run_tasks(model, tasks, o, events.progress, resume);
  } catch (...) {
    ckpt.remove_if_empty();  // nothing to resume: a rerun needs no resume
    throw;
  }
  r.prefill_seconds += resumed_prefill_s;
  m.resumed_tasks = r.n_known;
  out.n_known = r.n_known;
  out.seconds = r.seconds;
  if (s.shard.count > 0) {  // the checkpoint stays: it holds the shard's outcomes
    write_shard(dir, s, m, entries, tasks.size(), r);
    return out;
  }
  m.task_builds = task_builds(ckpt, m.version, tasks.size(), r.n_known);
  std::tie(out.markdown, out.plots) = write_reports(dir, m, tasks, entries, r);
  ckpt.remove();
  return out;
}

namespace {

std::string read_shard_file(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    fail(
        "'{}' is missing: {} is not a finished shard of `fasa eval sweep --shard` (still running, "
        "or stopped: run it again with --resume)",
        p.string(), p.parent_path().string());
  }
  return read_input_file(p.string(), "text file");
}

}  // namespace

MergedReports merge_sweep(const std::vector<std::string>& dirs, const std::string& tasks_file,
                          const std::string& out_dir) {
  std::vector<ShardFiles> shards;
  for (const std::string& d : dirs) {
    const fs::path dir(d);
    if (!fs::is_directory(dir)) fail("'{}' is not a directory", d);
    ShardFiles f;
    f.dir = d;
    f.shard_json = read_shard_file(dir / "shard.json");
    f.checkpoint = read_shard_file(dir / "checkpoint.jsonl");
    shards.push_back(std::move(f));
  }
  // The task file: as given, or the one shard 0 names (checked against the shards' sha256).
  std::string file = tasks_file;
  if (file.empty()) {
    file = parse_shard_json(shards[0].shard_json, dirs[0] + "/shard.json").meta.tasks_file;
  }
  const std::vector<Task> tasks = load_tasks(file);
  MergedSweep merged = merge_shards(shards, tasks, sha256_file_hex(file));
  merged.meta.tasks_file = file;
  merged.meta.date = utc_now();
  make_out_dir(out_dir);
  MergedReports out;
  std::tie(out.markdown, out.plots) =
      write_reports(out_dir, merged.meta, tasks, merged.entries, merged.r);
  out.n_shards = shards.size();
  return out;
}

}  // namespace fasa
