// Sweeps: every policy at every budget on a task file, whole or in shards, and shard merging:
//   fasa eval sweep -m MODEL --tasks FILE.jsonl --policies LIST --budgets LIST [--calib C] -o DIR
//                   [--shard I/N] [--resume]
//   fasa eval merge DIR... -o OUT [--tasks FILE.jsonl]
#include <cstdio>
#include <functional>

#include "cli_common.h"
#include "commands.h"
#include "fasa/eval/sweep_run.h"
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

SweepSettings sweep_settings(const SweepArgs& a) {
  SweepSettings s;
  s.tasks_file = a.tasks;
  s.policies = a.policies;
  s.policies.insert(s.policies.end(), a.specs.begin(), a.specs.end());
  s.budgets = a.budgets;
  s.calib = a.calib;
  s.out_dir = a.out_dir;
  s.n_ctx = a.run.n_ctx;
  s.jobs = a.run.jobs;
  s.kv_type = a.run.kv_type;
  s.chat = a.run.chat;
  s.question_under_policy = a.run.question_under_policy;
  s.resume = a.resume;
  s.resume_other_build = a.resume_other_build;
  s.shard = a.shard.empty() ? ShardSpec{} : parse_shard(a.shard);
  s.version = version_text();
  s.kernels = kernels_text();
  return s;
}

// ", a.svg, b.svg"
std::string plot_list(const std::vector<std::string>& plots) {
  std::string out;
  for (const std::string& p : plots) out += ", " + p;
  return out;
}

void run_sweep_command(const SweepArgs& a) {
  apply_threads(a.run.threads);
  const SweepSettings s = sweep_settings(a);
  std::function<void(int, int)> progress;
  SweepEvents ev;
  ev.calibration = [](const std::string& calib) {
    if (calib == "online") {
      std::fprintf(stderr, "fasa: calibration: online (none stored for this model file)\n");
    } else {
      std::fprintf(stderr, "fasa: calibration: stored %s\n", calib.c_str());
    }
  };
  ev.started = [&](const SweepStart& st) {
    if (s.shard.count > 0) {
      std::fprintf(stderr,
                   "fasa: sweep shard %d/%d: %zu policy settings on %zu of the %zu tasks -> %s\n",
                   s.shard.index, s.shard.count, st.n_settings, st.n_mine, st.n_tasks,
                   a.out_dir.c_str());
    } else {
      std::fprintf(stderr, "fasa: sweep of %zu policy settings on %zu tasks -> %s\n", st.n_settings,
                   st.n_tasks, a.out_dir.c_str());
    }
    if (s.resume) {
      std::fprintf(stderr, "fasa: resuming: %zu of %zu tasks already done (%s)\n", st.n_done,
                   st.n_mine, st.checkpoint.c_str());
    }
    progress = progress_printer("generations");
  };
  ev.progress = [&](int done, int total) { progress(done, total); };
  const SweepReports r = run_sweep(
      s, [&] { return load_model(a.model); }, ev);
  if (s.shard.count > 0) {
    std::printf(
        "shard %d/%d: %zu tasks done (%d from the checkpoint), %.0f s\nwrote %s/shard.json and "
        "checkpoint.jsonl; when every shard is done: fasa eval merge DIR... -o OUT\n",
        s.shard.index, s.shard.count, r.n_mine, r.n_known, r.seconds, a.out_dir.c_str());
    return;
  }
  std::printf("%s\nwrote %s/results.json, results.md%s\n", r.markdown.c_str(), a.out_dir.c_str(),
              plot_list(r.plots).c_str());
}

struct MergeArgs {
  std::vector<std::string> dirs;
  std::string out_dir, tasks;
};

void run_merge(const MergeArgs& a) {
  const MergedReports r = merge_sweep(a.dirs, a.tasks, a.out_dir);
  std::printf("%s\nmerged %zu shards: wrote %s/results.json, results.md%s\n", r.markdown.c_str(),
              r.n_shards, a.out_dir.c_str(), plot_list(r.plots).c_str());
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
  sc->callback([s] { run_sweep_command(*s); });

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
