// fasa — CLI entry point. Errors from any subcommand end here: one line on stderr, exit 1.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/core/isa.h"
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
  fasa::cli::add_eval_command(app);
  fasa::cli::add_bench_command(app);
  fasa::cli::add_calibrate_command(app);
  fasa::cli::add_serve_command(app);
  fasa::cli::add_synth_command(app);
  try {
    fasa::active_isa();  // a bad FASA_ISA fails here, before any work
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
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
