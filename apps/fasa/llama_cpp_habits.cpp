#include "llama_cpp_habits.h"

#include <cstdio>

namespace fasa::cli {
namespace {

void note_ignored(const std::string& flag, const std::string& why) {
  std::fprintf(stderr, "fasa: note: %s ignored: %s\n", flag.c_str(), why.c_str());
}

void add_to(CLI::App* cmd) {
  if (cmd->get_option_no_throw("--model") != nullptr) {
    const std::string cpu = "fasa runs on the CPU (no GPU offload)";
    const std::string group = "llama.cpp compatibility";
    cmd->add_option_function<std::string>(
           "--n-gpu-layers,--gpu-layers",
           [cpu](const std::string& v) { note_ignored("--n-gpu-layers " + v, cpu); },
           "accepted for llama.cpp habits (also -ngl N) and ignored: fasa runs on the CPU")
        ->group(group);
    for (const char* flag : {"--main-gpu", "--split-mode", "--tensor-split"}) {
      const std::string name = flag;
      cmd->add_option_function<std::string>(
             name, [cpu, name](const std::string& v) { note_ignored(name + " " + v, cpu); },
             "accepted for llama.cpp habits (also -" +
                 std::string(name == "--main-gpu"     ? "mg"
                             : name == "--split-mode" ? "sm"
                                                      : "ts") +
                 ") and ignored")
          ->group(group);
    }
    cmd->add_flag_callback(
           "--no-kv-offload", [cpu] { note_ignored("--no-kv-offload", cpu); },
           "accepted for llama.cpp habits (also -nkvo) and ignored")
        ->group(group);
    cmd->add_option_function<std::string>(
           "--flash-attn",
           [](const std::string& v) {
             note_ignored("--flash-attn " + v,
                          "fasa's attention kernels are its own and always fused (no switch)");
           },
           "accepted for llama.cpp habits (also -fa [on|off|auto]) and ignored")
        ->group(group);
  }
  for (CLI::App* s : cmd->get_subcommands([](CLI::App*) { return true; })) add_to(s);
}

}  // namespace

void add_gpu_layer_notes(CLI::App& app) { add_to(&app); }

}  // namespace fasa::cli
