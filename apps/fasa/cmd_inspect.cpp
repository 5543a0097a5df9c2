// `fasa inspect` — placeholder until implemented.
#include "commands.h"
#include "fasa/core/error.h"

namespace fasa::cli {

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "not implemented yet");
  cmd->callback([] { fail("'inspect' is not implemented yet"); });
}

}  // namespace fasa::cli
