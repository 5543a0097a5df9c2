// Sweeps: every policy at every budget on a task file, whole or in shards, and shard merging:
//   fasa eval sweep -m MODEL --tasks FILE.jsonl --policies LIST --budgets LIST [--calib C] -o DIR
//                   [--shard I/N] [--resume]
//   fasa eval merge DIR... -o OUT [--tasks FILE.jsonl]
#include <cstdio>
#include <filesystem>
#include <map>
#include <utility>

#include "cli_common.h"
#include "commands.h"
#include "fasa/attention/calibration_store.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/core/sha256.h"
#include "fasa/eval/sweep.h"
#include "fasa/eval/sweep_checkpoint.h"
#include "fasa/eval/sweep_shard.h"
#include "fasa/eval/task_runner.h"
#include "fasa/io/atomic_file.h"
#include "fasa/io/gguf.h"
#include "fasa/io/svg.h"
#include "provenance.h"

namespace fasa::cli {

namespace {

struct SweepArgs {
  std::string model, tasks, calib, out_dir;
  std::vector<std::string> policies, budgets;
  std::vector<std::string> specs;  // --policy: whole specs, whose options may hold commas
  TaskRunArgs run;                 // -c, -t, -j, --kv-type, --chat
  bool resume = false;
  bool resume_other_build = false;
  std::string shard;  // --shard I/N ("": the whole sweep)
};

void write_file(const std::filesystem::path& p, const std::string& s) {
  write_file_atomic(p.string(), s);
}

// What results.json records about the run (the hashes bind a resumed sweep to its inputs).
SweepMeta sweep_meta(const SweepArgs& a, const Model& model) {
  SweepMeta m;
  m.model = model.file().path();
  m.model_sha256 = sha256_file_hex(m.model);
  m.calib = a.calib;
  if (!a.calib.empty() && a.calib != "online") m.calib_sha256 = sha256_file_hex(a.calib);
  m.tasks_file = a.tasks;
  m.tasks_sha256 = sha256_file_hex(a.tasks);
  m.version = version_text();
  m.kernels = kernels_text();
  m.date = utc_now();
  m.chat = a.run.chat;
  m.question_under_policy = a.run.question_under_policy;
  m.kv_type = a.run.kv_type;
  m.threads = num_threads();
  return m;
}

// What a checkpoint must match to be resumed.
SweepIdentity sweep_identity(const SweepArgs& a, const SweepMeta& m, size_t n_tasks,
                             const std::vector<std::string>& policies, ShardSpec shard) {
  SweepIdentity id;
  id.model_sha256 = m.model_sha256;
  id.calib_sha256 = m.calib_sha256;
  id.tasks_sha256 = m.tasks_sha256;
  id.kv_type = a.run.kv_type;
  id.n_tasks = static_cast<int>(n_tasks);
  id.n_ctx = a.run.n_ctx;
  id.chat = a.run.chat;
  id.question_under_policy = a.run.question_under_policy;
  id.policies = policies;
  id.shard_index = shard.index;
  id.shard_count = shard.count;
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

// results.json, results.md and the plots into `dir`; returns the markdown and ", plot names".
std::pair<std::string, std::string> write_reports(const std::filesystem::path& dir,
                                                  const SweepMeta& m,
                                                  const std::vector<Task>& tasks,
                                                  const std::vector<SweepEntry>& entries,
                                                  const TaskRunResult& r) {
  write_file(dir / "results.json", sweep_json(m, tasks, entries, r));
  const std::string md = sweep_markdown(m, tasks, entries, r);
  write_file(dir / "results.md", md);
  std::string plots;
  for (const auto& [name, svg] : sweep_plots(tasks, entries, r)) {
    write_svg_file((dir / name).string(), svg);
    plots += ", " + name;
  }
  return {md, plots};
}

void make_out_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) fail("cannot create output directory '{}'", dir);
}

void run_sweep(const SweepArgs& args) {
  apply_threads(args.run.threads);
  SweepArgs a = args;
  const ShardSpec shard = a.shard.empty() ? ShardSpec{} : parse_shard(a.shard);
  std::vector<std::string> policies = a.policies;
  policies.insert(policies.end(), a.specs.begin(), a.specs.end());
  std::vector<SweepEntry> entries = sweep_entries(policies, a.budgets, a.calib);
  const std::vector<Task> tasks = load_tasks(a.tasks);
  make_out_dir(a.out_dir);
  const std::filesystem::path dir(a.out_dir);
  if (shard.count > 0 && !a.resume && std::filesystem::exists(dir / "shard.json")) {
    fail(
        "'{}' holds a finished shard (shard.json): merge it with `fasa eval merge`, or write to "
        "another directory",
        a.out_dir);
  }
  auto model = load_model(a.model);
  bool calibrated = false;  // some policy takes a calibration
  for (const std::string& spec : policies) {
    calibrated |= policy_takes_calibration(spec.substr(0, spec.find(':')));
  }
  if (a.calib.empty() && calibrated) {  // no --calib: the model's stored one, else online
    a.calib = find_stored_calibration(model->sha256());
    entries = sweep_entries(policies, a.budgets, a.calib.empty() ? "online" : a.calib);
    if (a.calib.empty()) {
      a.calib = "online";
      std::fprintf(stderr, "fasa: calibration: online (none stored for this model file)\n");
    } else {
      std::fprintf(stderr, "fasa: calibration: stored %s\n", a.calib.c_str());
    }
  }
  SweepMeta m = sweep_meta(a, *model);
  TaskRunOptions o;
  o.policies.clear();  // (the default is {"full"})
  for (const auto& e : entries) o.policies.push_back(e.spec);
  o.chat = a.run.chat;
  o.question_under_policy = a.run.question_under_policy;
  o.jobs = a.run.jobs;
  o.n_ctx = a.run.n_ctx;
  o.kv_type = parse_kv_type(a.run.kv_type);
  // Every finished task goes to DIR/checkpoint.jsonl at once; --resume runs only the others.
  CheckpointFile ckpt((dir / "checkpoint.jsonl").string(),
                      sweep_identity(a, m, tasks.size(), o.policies, shard), tasks, a.resume);
  if (!a.resume_other_build) {
    check_same_build(ckpt.done(), m.version, (dir / "checkpoint.jsonl").string());
  }
  double resumed_prefill_s = 0.0;
  TaskRunResume resume = resume_from(ckpt, tasks, m.version, &resumed_prefill_s);
  resume.elsewhere = tasks_elsewhere(shard, tasks.size());
  const size_t n_mine = shard_task_count(shard, tasks.size());
  if (shard.count > 0) {
    std::filesystem::remove(dir / "shard.json");  // written again when this run finishes
    std::fprintf(stderr,
                 "fasa: sweep shard %d/%d: %zu policy settings on %zu of the %zu tasks -> %s\n",
                 shard.index, shard.count, entries.size(), n_mine, tasks.size(), a.out_dir.c_str());
  } else {
    std::fprintf(stderr, "fasa: sweep of %zu policy settings on %zu tasks -> %s\n", entries.size(),
                 tasks.size(), a.out_dir.c_str());
  }
  if (a.resume) {
    std::fprintf(stderr, "fasa: resuming: %zu of %zu tasks already done (%s)\n", ckpt.done().size(),
                 n_mine, (dir / "checkpoint.jsonl").c_str());
  }
  TaskRunResult r;
  try {
    r = run_tasks(model, tasks, o, progress_printer("generations"), resume);
  } catch (...) {
    ckpt.remove_if_empty();  // nothing to resume: a rerun needs no --resume
    throw;
  }
  r.prefill_seconds += resumed_prefill_s;
  m.resumed_tasks = r.n_known;
  if (shard.count > 0) {
    // The checkpoint stays: it holds the shard's outcomes, which `eval merge` reads.
    ShardRecord rec;
    rec.shard = shard;
    rec.meta = m;
    rec.entries = entries;
    rec.n_tasks = static_cast<int>(tasks.size());
    rec.n_ctx_requested = a.run.n_ctx;
    rec.n_ctx = r.n_ctx;
    rec.seconds = r.seconds;
    rec.n_prefills = r.n_prefills;
    write_file(dir / "shard.json", shard_json(rec));
    std::printf(
        "shard %d/%d: %zu tasks done (%d from the checkpoint), %.0f s\nwrote %s/shard.json and "
        "checkpoint.jsonl; when every shard is done: fasa eval merge DIR... -o OUT\n",
        shard.index, shard.count, n_mine, r.n_known, r.seconds, a.out_dir.c_str());
    return;
  }
  m.task_builds = task_builds(ckpt, m.version, tasks.size(), r.n_known);
  const auto [md, plots] = write_reports(dir, m, tasks, entries, r);
  ckpt.remove();
  std::printf("%s\nwrote %s/results.json, results.md%s\n", md.c_str(), a.out_dir.c_str(),
              plots.c_str());
}

struct MergeArgs {
  std::vector<std::string> dirs;
  std::string out_dir, tasks;
};

std::string read_shard_file(const std::filesystem::path& p) {
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) {
    fail(
        "'{}' is missing: {} is not a finished shard of `fasa eval sweep --shard` (still running, "
        "or stopped: run it again with --resume)",
        p.string(), p.parent_path().string());
  }
  return read_text_file(p.string());
}

void run_merge(const MergeArgs& a) {
  std::vector<ShardFiles> shards;
  for (const std::string& d : a.dirs) {
    const std::filesystem::path dir(d);
    if (!std::filesystem::is_directory(dir)) fail("'{}' is not a directory", d);
    ShardFiles f;
    f.dir = d;
    f.shard_json = read_shard_file(dir / "shard.json");
    f.checkpoint = read_shard_file(dir / "checkpoint.jsonl");
    shards.push_back(std::move(f));
  }
  // The task file: --tasks, or the one shard 0 names (checked against the shards' sha256).
  std::string tasks_file = a.tasks;
  if (tasks_file.empty()) {
    tasks_file = parse_shard_json(shards[0].shard_json, a.dirs[0] + "/shard.json").meta.tasks_file;
  }
  const std::vector<Task> tasks = load_tasks(tasks_file);
  MergedSweep merged = merge_shards(shards, tasks, sha256_file_hex(tasks_file));
  merged.meta.tasks_file = tasks_file;
  merged.meta.date = utc_now();
  make_out_dir(a.out_dir);
  const auto [md, plots] = write_reports(a.out_dir, merged.meta, tasks, merged.entries, merged.r);
  std::printf("%s\nmerged %zu shards: wrote %s/results.json, results.md%s\n", md.c_str(),
              shards.size(), a.out_dir.c_str(), plots.c_str());
}

}  // namespace

void add_sweep_commands(CLI::App* eval) {
  auto s = std::make_shared<SweepArgs>();
  auto* sc = eval->add_subcommand("sweep", "every policy at every budget on a task file");
  sc->add_option("-m,--model", s->model, "GGUF path or pulled model name")->required();
  sc->add_option("--tasks", s->tasks, "JSONL task file")->required();
  sc->add_option("--policies", s->policies, "policy specs, comma-separated (e.g. full,oracle,fasa)")
      ->delimiter(',');
  sc->add_option("--policy", s->specs,
                 "one more policy spec, taken whole (repeatable): for a spec with "
                 "several options, e.g. fasa:fcs=compound,fc_sets=group");
  sc->add_option("--budgets", s->budgets, "budgets, comma-separated (e.g. 64,128,256)")
      ->delimiter(',');
  sc->add_option("--calib", s->calib, "calibration for fasa and double-sparsity");
  sc->add_option("-o,--out", s->out_dir, "output directory")->required();
  add_task_run_options(sc, s->run);
  sc->add_flag("--resume", s->resume,
               "finish an interrupted sweep: run only the tasks missing from DIR/checkpoint.jsonl "
               "(same settings required)");
  sc->add_flag("--resume-other-build", s->resume_other_build,
               "with --resume: accept tasks that another fasa build ran (refused by default: "
               "results.json then counts the tasks of each build)");
  sc->add_option("--shard", s->shard,
                 "I/N: run only the tasks whose index % N == I (every setting of each); the "
                 "directory then holds shard.json and checkpoint.jsonl for `fasa eval merge`");
  sc->callback([s] { run_sweep(*s); });

  auto mg = std::make_shared<MergeArgs>();
  auto* mc =
      eval->add_subcommand("merge",
                           "merge the shards of a sweep (eval sweep --shard I/N) into its reports");
  mc->add_option("dirs", mg->dirs, "the shards' output directories, one per shard")->required();
  mc->add_option("-o,--out", mg->out_dir, "output directory")->required();
  mc->add_option("--tasks", mg->tasks,
                 "the sweep's task file (default: the path shard 0 recorded; its sha256 must be "
                 "the shards')");
  mc->callback([mg] { run_merge(*mg); });
}

}  // namespace fasa::cli
