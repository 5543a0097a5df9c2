// Helpers shared by the CLI subcommands: model resolution, prompt reading, statistics.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/core/memory.h"   // human_bytes, used by most commands
#include "fasa/core/process.h"  // peak_rss_bytes, used by most commands
#include "fasa/engine/lossless.h"
#include "fasa/model/model.h"

namespace fasa::cli {

// MODEL is a GGUF path or the name of a known model already pulled into the cache
// (hub::resolve_model_path).
// Throws fasa::Error saying what was tried (and to run `fasa pull NAME`).
std::string resolve_model_path(const std::string& model);
// verify: hash a pulled model again before loading it (`--verify`), not only when its size or
// mtime changed.
std::shared_ptr<const Model> load_model(const std::string& model, bool verify = false);

// Reads a whole text file; throws fasa::Error naming the file.
std::string read_text_file(const std::string& path);
// The same, where "-" reads standard input to its end (`-f -`); an empty standard input is an
// error that says so.
std::string read_text_or_stdin(const std::string& path);

// Applies --threads (0 = all cores); throws on a negative count.
void apply_threads(int n_threads);

// "3 global layers 96.0 MiB, 15 sliding-window layers (window 512, 1023-row rings) 7.9 MiB";
// empty when the model has no sliding-window layers.
std::string kv_by_layer_type(const KvCache& cache);

// A progress callback (done, total) printing "fasa: 12/45 WHAT, 0.15/s, 1m20s elapsed, ~3m10s
// left" on stderr (progress_line.h: rewritten in place on a terminal, a line every 10 s in a file).
std::function<void(int, int)> progress_printer(const char* what);

// --policy and its flags, shared by every command that runs a policy. The flags are folded into
// the policy spec "name:key=value,..." (see attention/policy.h).
// Commands that compare policies in one run (bench, eval recall) also take `--compare SPEC`
// (repeatable): more complete policy specs, run side by side with the first.
// The spec a command runs with `model`: a calibrated policy given no calib= (or calib=auto)
// takes the calibration stored for the model file (attention/calibration_store.h), or
// calib=online when none is stored. Says on stderr, once per file, which calibration a
// calibrated policy uses ("fasa: calibration: stored PATH", "file PATH" or "online (window
// W...)"), unless `quiet`.
std::string resolved_spec(const std::string& spec, const std::shared_ptr<const Model>& model,
                          bool quiet = false);
std::vector<std::string> resolved_specs(const std::vector<std::string>& specs,
                                        const std::shared_ptr<const Model>& model,
                                        bool quiet = false);

// What an online-calibrated policy did, in one line (no "fasa: " prefix, no newline): from which
// queries, in how long, and that time's share of the prefill (prefill_ms; 0: not said).
std::string online_calibration_text(const OnlineCalibrationInfo& oc, double prefill_ms);

struct PolicyArgs {
  std::string policy = "full";
  std::string calib, budget, n_tip, gqa, dense_layers, sink, recent, variant, offload_dir;
  std::vector<std::string> compare;
  std::string spec() const;
  std::vector<std::string> specs() const;  // spec(), then the --compare specs
};
void add_policy_options(CLI::App* cmd, PolicyArgs& p, bool with_compare = false);

// The flags of the commands that run a task file (`eval tasks`, `eval sweep`): -c, -t, -j,
// --kv-type, --chat.
struct TaskRunArgs {
  int n_ctx = 0;
  int threads = 0;
  int jobs = 1;
  std::string kv_type = "f16";
  bool chat = false;
  bool question_under_policy = false;
};
void add_task_run_options(CLI::App* cmd, TaskRunArgs& r);

// --lossless off|auto|K (engine/lossless.h), the same help in every command that takes it.
void add_lossless_option(CLI::App* cmd, std::string& value);
// "lossless K: N verifications, acceptance ..., tokens per verification, KV read per token".
std::string lossless_summary(const std::string& setting, const LosslessStats& st);

}  // namespace fasa::cli
