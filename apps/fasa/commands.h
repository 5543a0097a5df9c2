// The `fasa` CLI: one file per subcommand, each adding itself to the app.
#pragma once

#include <CLI/CLI.hpp>

namespace fasa::cli {

void add_pull_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_chat_command(CLI::App& app);  // also `run -i`, `run -cnv` (llama_cpp_habits.h)
void add_eval_command(CLI::App& app);
// `eval tasks` (under `eval`) and `gen-tasks`.
void add_tasks_commands(CLI::App& app, CLI::App* eval);
// `eval sweep` and `eval merge` (under `eval`).
void add_sweep_commands(CLI::App* eval);
void add_compare_commands(CLI::App* eval);  // eval protocols, eval paired
void add_bench_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);  // also `calib list` and `calib show`
void add_calib_commands(CLI::App& app);     // `calib list`, `calib show` (cmd_calib.cpp)
void add_serve_command(CLI::App& app);
void add_synth_command(CLI::App& app);  // paper-shaped random-weight models
// `fasa help [TOPIC]` (policies, or a command); add after every command.
void add_help_command(CLI::App& app);

}  // namespace fasa::cli
