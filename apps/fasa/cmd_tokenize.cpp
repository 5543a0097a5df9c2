// `fasa tokenize` — placeholder until implemented.
#include "commands.h"
#include "fasa/core/error.h"

namespace fasa::cli {

void add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "not implemented yet");
  cmd->callback([] { fail("'tokenize' is not implemented yet"); });
}

}  // namespace fasa::cli
