// `fasa help [TOPIC]`: the help topics; `fasa help policies` is the attention policies and their
// options (the table every --policy flag takes), `fasa help COMMAND` a command's --help.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"

namespace fasa::cli {
namespace {

std::string command_list(const CLI::App& app) {
  std::string names;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (s->get_name() == "help") continue;
    names += (names.empty() ? "" : ", ") + s->get_name();
  }
  return names;
}

void print_topics(const CLI::App& app) {
  std::printf(
      "fasa help TOPIC, where TOPIC is:\n"
      "  policies   the attention policies (--policy NAME[:key=value,...]) and their options\n"
      "  COMMAND    a command's flags, as `fasa COMMAND --help`: %s\n",
      command_list(app).c_str());
}

void print_policies() {
  std::printf(
      "Attention policies: --policy NAME, its options as flags (--budget B, --calib FILE, ...) "
      "or folded into the spec, NAME:key=value,... (docs/POLICIES.md has the details).\n\n%s\n",
      policy_help().c_str());
}

}  // namespace

void add_help_command(CLI::App& app) {
  auto topic = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("help", "help topics: `fasa help policies` lists the policies");
  cmd->add_option("topic", *topic, "policies, or a command's name (none: list the topics)");
  app.footer("`fasa help` lists the help topics; `fasa help policies` the attention policies.");
  CLI::App* root = &app;
  cmd->callback([root, topic] {
    if (topic->empty()) return print_topics(*root);
    if (*topic == "policies" || *topic == "policy") return print_policies();
    for (const CLI::App* sub : root->get_subcommands([](const CLI::App*) { return true; })) {
      if (sub->get_name() == *topic && *topic != "help") {
        std::printf("%s", sub->help().c_str());
        return;
      }
    }
    fail("unknown help topic '{}' (topics: policies, or a command: {})", *topic,
         command_list(*root));
  });
}

}  // namespace fasa::cli
