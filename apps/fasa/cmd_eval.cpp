// `fasa eval` — placeholder until implemented.
#include "commands.h"
#include "fasa/core/error.h"

namespace fasa::cli {

void add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "not implemented yet");
  cmd->callback([] { fail("'eval' is not implemented yet"); });
}

}  // namespace fasa::cli
