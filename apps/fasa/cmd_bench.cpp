// `fasa bench` — placeholder until implemented.
#include "commands.h"
#include "fasa/core/error.h"

namespace fasa::cli {

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "not implemented yet");
  cmd->callback([] { fail("'bench' is not implemented yet"); });
}

}  // namespace fasa::cli
