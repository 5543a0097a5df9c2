// `fasa run` — placeholder until implemented.
#include "commands.h"
#include "fasa/core/error.h"

namespace fasa::cli {

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "not implemented yet");
  cmd->callback([] { fail("'run' is not implemented yet"); });
}

}  // namespace fasa::cli
