// fasa — CLI entry point. Errors from any subcommand end here: one line on stderr, exit 1.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_errors.h"
#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/core/isa.h"
#include "llama_cpp_habits.h"
#include "provenance.h"

int main(int argc, char** argv) {
  CLI::App app{"fasa: LLM inference with Frequency-Aware Sparse Attention"};
  app.require_subcommand(1);
  // `fasa --version`: the release and the commit built (bench/compare_llamacpp.py records it).
  app.set_version_flag("--version", fasa::cli::version_text());
  fasa::cli::add_pull_command(app);
  fasa::cli::add_inspect_command(app);
  fasa::cli::add_tokenize_command(app);
  fasa::cli::add_run_command(app);
  fasa::cli::add_chat_command(app);
  fasa::cli::add_eval_command(app);
  fasa::cli::add_bench_command(app);
  fasa::cli::add_calibrate_command(app);
  fasa::cli::add_serve_command(app);
  fasa::cli::add_synth_command(app);
  fasa::cli::add_gpu_layer_notes(app);
  fasa::cli::add_help_command(app);
  std::vector<std::string> args(argv, argv + argc);
  try {
    args = fasa::cli::llama_cpp_spellings(argc, argv);
    if (const std::string word = fasa::cli::single_dash_word_error(app, args); !word.empty()) {
      std::fprintf(stderr, "fasa: error: %s\n", word.c_str());
      return 1;
    }
    fasa::active_isa();  // a bad FASA_ISA fails here, before any work
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11's order, no argv[0]
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return fasa::cli::report_parse_error(app, e, args);
  } catch (const fasa::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "fasa: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "fasa: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
